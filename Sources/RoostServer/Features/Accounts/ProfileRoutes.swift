import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Accounts": the signed-in user's profile (`GET/PATCH/DELETE /v1/me`) and devices.
struct ProfileRoutes: Sendable {
    /// Sessions, and sign-in's password check for erasing the account (counted against the
    /// account's failures).
    let accounts: AccountRoutes
    var auth: Authentication { accounts.auth }
    static let platforms: Set<String> = ["apns", "fcm", "webpush", "unifiedpush"]
    static let maxDevices = 20

    struct PatchBody: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let displayName: String?
        let home: Home?
        /// A new address starts a change (`ContactRoutes.startChange`).
        let email: String?
        let phone: String?
        /// Required with a new email or phone (`Credentials.confirmPassword`).
        let currentPassword: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case displayName = "display_name"
            case currentPassword = "current_password"
            case home, email, phone
        }
    }

    struct DeviceBody: Decodable, KnownFields {
        let platform: String
        let token: String?
        /// A browser's `PushSubscription.toJSON()`, for `webpush`; a UnifiedPush distributor's
        /// endpoint and keys, for `unifiedpush`.
        let subscription: Subscription?
        static let fieldNames: Set<String> = ["platform", "token", "subscription"]

        struct Subscription: Decodable {
            let endpoint: String
            let keys: Keys
            struct Keys: Decodable {
                let p256dh: String
                let auth: String
            }
        }
    }

    /// A device as it registers: its token, and for Web Push its keys and its endpoint as the
    /// outbound policy read it.
    struct NewDevice {
        let token: String
        var keys: (p256dh: [UInt8], auth: [UInt8])?
        var endpoint: OutboundURL?
    }

    /// The device's token, and for Web Push its keys: a `webpush` device must bring its
    /// subscription, whose endpoint must be an `https` URL on an allowed push service and whose
    /// keys must be a P-256 point and a 16-byte secret (400 otherwise). A `unifiedpush` device
    /// may bring one too (its distributor's endpoint, on any host whose addresses are public),
    /// and is then pushed to directly; with a bare token it goes through the webhook.
    func newDevice(_ body: DeviceBody) throws(APIError) -> NewDevice {
        let unifiedPush = body.platform == "unifiedpush" && body.subscription != nil
        guard body.platform == "webpush" || unifiedPush else {
            guard body.subscription == nil else { throw APIError.invalid("only webpush and unifiedpush devices have a subscription", "subscription") }
            guard let token = body.token else { throw APIError.invalid("token is required", "token") }
            return NewDevice(token: try BoundedText.validate(token, field: "token", range: 1...4096))
        }
        guard let subscription = body.subscription else {
            throw APIError.invalid("a webpush device registers its subscription: {endpoint, keys: {p256dh, auth}}", "subscription")
        }
        let endpoint: OutboundURL
        do {
            endpoint = unifiedPush ? try accounts.push.unifiedPushEndpoint(subscription.endpoint) : try accounts.push.endpoint(subscription.endpoint)
        } catch {
            throw APIError.invalid(unifiedPush ? "the endpoint must be an https:// URL of a push server: \(error)"
                                              : "the endpoint must be an https:// URL on a known push service: \(error)", "subscription.endpoint")
        }
        guard let p256dh = Secrets.decodeBase64URL(subscription.keys.p256dh), (try? P256Key(publicPoint: p256dh)) != nil else {
            throw APIError.invalid("p256dh must be a base64url P-256 public key", "subscription.keys.p256dh")
        }
        guard let auth = Secrets.decodeBase64URL(subscription.keys.auth), auth.count == 16 else {
            throw APIError.invalid("auth must be 16 bytes, base64url", "subscription.keys.auth")
        }
        return NewDevice(token: subscription.endpoint, keys: (p256dh, auth), endpoint: endpoint)
    }

    /// A Web Push endpoint's name must lead only where the outbound policy lets Roost connect
    /// (public addresses): checked now, and again by every delivery, since DNS may change.
    func checkAddresses(of endpoint: OutboundURL) async throws(APIError) {
        do {
            _ = try await accounts.push.network.addressesDetached(of: endpoint)
        } catch {
            throw APIError.invalid("the endpoint's host must resolve to public addresses only: \(error)", "subscription.endpoint")
        }
    }

    struct DeviceView: Encodable {
        @LowercaseID var id: UUID
        let platform: String
        let token: String
        let createdAt: Date

        init(_ device: Device) {
            id = device.id
            platform = device.platform
            token = device.token
            createdAt = device.createdAt
        }

        enum CodingKeys: String, CodingKey {
            case id, platform, token
            case createdAt = "created_at"
        }
    }

    /// `GET /v1/me` with the caller's own home (which others see only through shared groups).
    struct MeView: Encodable {
        let user: UserView
        let home: Home?

        func encode(to encoder: any Encoder) throws {
            try user.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(home, forKey: .home)
        }

        enum CodingKeys: String, CodingKey { case home }
    }


    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.get, "/v1/me", signedIn: auth) { _, caller in
            let user = try await caller.user()
            let home = try await pool.withConnection { try $0.withTenantTransaction(user.tenantID) { try UserStore().home(user: user.id, on: $0) } }
            return try APIJSON.response(.ok, MeView(user: UserView(user), home: home))
        }
        builder.add(.patch, "/v1/me", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(PatchBody.self)
            let name = try body.displayName.map { name throws(APIError) in try BoundedText.name(name, field: "display_name", range: 1...100) }
            var cleaned: Home?
            if let given = body.home {
                cleaned = Home(
                    address: try given.address.map { value throws(APIError) in try BoundedText.validate(value, field: "home.address", range: 0...500) },
                    notes: try given.notes.map { value throws(APIError) in try BoundedText.validate(value, field: "home.notes", range: 0...2000, allowNewlines: true) },
                    location: try given.location.map { place throws(APIError) in
                        try place.validate(field: "home.location")
                        return Location(lat: place.lat, lon: place.lon)
                    })
            }
            let home = cleaned
            // New addresses, normalised; the same as now changes nothing.
            let email = try body.email.map { value throws(APIError) in
                guard let normalized = EmailAddress.normalize(value) else { throw APIError.invalid("email is not a valid address", "email") }
                return normalized
            }.flatMap { $0 == user.email ? nil : $0 }
            let phone = try body.phone.map { value throws(APIError) in try ContactAddresses.validate(email: nil, phone: value).phone! }
                .flatMap { $0 == user.phone ? nil : $0 }
            // A stolen session alone cannot move the account to another address.
            if email != nil || phone != nil { try await accounts.credentials.confirmPassword(body.currentPassword, of: user, context) }
            let limits = accounts.limits
            let updated = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    try UserStore().updateProfile(user: user.id, displayName: name, home: home, on: connection)
                    if let email { try ContactRoutes.startChange(of: user, channel: "email", to: email, limits: limits, on: connection) }
                    if let phone { try ContactRoutes.startChange(of: user, channel: "phone", to: phone, limits: limits, on: connection) }
                    return (try UserStore().find(id: user.id, on: connection), try UserStore().home(user: user.id, on: connection))
                }
            }
            guard let fresh = updated.0 else { throw APIError(.unauthorized, code: .unauthenticated, message: "the account is gone") }
            // 202 while an address change waits for its code; the account shows its old address until then.
            return try APIJSON.response(email != nil || phone != nil ? .accepted : .ok, MeView(user: UserView(fresh), home: updated.1))
        }
        builder.add(.delete, "/v1/me", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            // A stolen session alone cannot erase the account: the password must come with it.
            try await accounts.credentials.confirmPassword(try context.decodeJSON(Credentials.CurrentPasswordBody.self).given, of: user, context)
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { try AccountDeletion.run(user, on: $0) }
            }
            return HTTPResponse(status: .noContent)
        }
        builder.add(.post, "/v1/me/devices", bodyLimit: 8 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(DeviceBody.self)
            guard Self.platforms.contains(body.platform) else {
                throw APIError.invalid("platform must be apns, fcm, webpush or unifiedpush", "platform")
            }
            let registering = try newDevice(body)
            if let endpoint = registering.endpoint { try await checkAddresses(of: endpoint) }
            let (token, keys) = (registering.token, registering.keys)
            let (device, created) = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    if try DeviceStore().count(user: user.id, on: connection) >= Self.maxDevices {
                        let existing = try DeviceStore().list(user: user.id, on: connection)
                        guard let same = existing.first(where: { $0.platform == body.platform && $0.token == token }) else {
                            throw APIError(.conflict, code: .conflict, message: "at most \(Self.maxDevices) devices; remove one first")
                        }
                        return (same, false)
                    }
                    return try DeviceStore().register(tenant: user.tenantID, user: user.id, platform: body.platform, token: token, webPushKeys: keys,
                                                      on: connection)
                }
            }
            return try APIJSON.response(created ? .created : .ok, DeviceView(device))
        }
        let push = accounts.push
        builder.add(.get, "/v1/push/vapid-public-key") { _ in
            let key = try await push.vapid.key(pool)
            return .json(.ok, Array("{\"public_key\":\"\(Secrets.base64URL(key.publicPoint))\"}".utf8))
        }
        builder.add(.get, "/v1/me/devices", signedIn: auth) { _, caller in
            let user = try await caller.user()
            let devices = try await pool.withConnection { try $0.withTenantTransaction(user.tenantID) { try DeviceStore().list(user: user.id, on: $0) } }
            return try APIJSON.response(.ok, Page(items: devices.map(DeviceView.init), next: nil))
        }
        builder.add(.delete, "/v1/me/devices/{id:uuid}", signedIn: auth) { context, caller in
            let user = try await caller.user()
            let id = context.parameters.uuid("id")!
            let deleted = try await pool.withConnection { try $0.withTenantTransaction(user.tenantID) { try DeviceStore().delete(id: id, user: user.id, on: $0) } }
            guard deleted else { throw APIError(.notFound, code: .notFound, message: "no such device") }
            return HTTPResponse(status: .noContent)
        }
    }
}
