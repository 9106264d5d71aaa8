import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Accounts": proving an email address or phone number with a 6-digit code sent through
/// the outbox. Codes are stored hashed, live 10 minutes and allow 5 tries; a new code can be
/// asked for once a minute (each send costs the tenant an email or SMS).
struct ContactRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits
    static let codeLifetime = 600
    static let maxAttempts = 5
    static let resendInterval = 60

    struct VerifyBody: Decodable, KnownFields {
        let channel: String
        static let fieldNames: Set<String> = ["channel"]
    }

    struct UndoBody: Decodable, KnownFields {
        let token: String
        static let fieldNames: Set<String> = ["token"]
    }

    /// How long the old address can undo a confirmed change.
    static let undoLifetime = 7 * 24 * 3600

    struct ConfirmBody: Decodable, KnownFields {
        let channel: String
        let code: String
        static let fieldNames: Set<String> = ["channel", "code"]
    }

    /// What a confirmation attempt came to; decided in the transaction that counts the attempt.
    enum Outcome: Sendable {
        case verified(User)
        case wrongCode(left: Int)
        case exhausted
        case expired
        case nonePending
    }

    func add(to builder: inout Router.Builder) {
        let pool = auth.pool
        addUndoRoute(to: &builder)
        builder.add(.post, "/v1/me/contacts/verify", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(VerifyBody.self)
            let address = try Self.address(of: user, channel: body.channel)
            let limits = self.limits
            try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection in
                    try Self.requireResendAllowed(user: user, channel: body.channel, on: connection)
                    try Self.sendCode(to: address, channel: body.channel, of: user, change: false, smsField: "channel", limits: limits, on: connection)
                }
            }
            return try APIJSON.response(.accepted, ["status": "sent"])
        }
        builder.add(.post, "/v1/me/contacts/confirm", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let user = try await caller.user()
            let body = try context.decodeJSON(ConfirmBody.self)
            guard body.channel == "email" || body.channel == "phone" else { throw APIError.invalid("channel must be email or phone", "channel") }
            guard body.code.utf8.count == 6, body.code.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw APIError.invalid("code must be the 6 digits that were sent", "code")
            }
            let outcome = try await pool.withConnection { connection in
                try connection.withTenantTransaction(user.tenantID) { connection -> Outcome in
                    let store = ContactVerificationStore()
                    guard let pending = try store.pending(user: user.id, channel: body.channel, on: connection) else { return .nonePending }
                    // The code was sent to the account's own address (a verification), or to a
                    // new one (a change, which switches the address on success).
                    let current = body.channel == "email" ? user.email : user.phone
                    let changing = pending.address != current
                    let address = changing ? pending.address : try Self.address(of: user, channel: body.channel)
                    let given = Self.hash(body.code, user: user.id, channel: body.channel, address: address)
                    if pending.expired {
                        try store.remove(user: user.id, channel: body.channel, on: connection)
                        return .expired
                    }
                    guard pending.attempts < Self.maxAttempts else { return .exhausted }
                    guard Secrets.constantTimeEqual(pending.codeHash, given) else {
                        try store.recordAttempt(user: user.id, channel: body.channel, on: connection)
                        return .wrongCode(left: Self.maxAttempts - pending.attempts - 1)
                    }
                    try store.remove(user: user.id, channel: body.channel, on: connection)
                    if changing {
                        // Taken meanwhile by another account: the unique index decides, once.
                        do {
                            try UserStore().switchAddress(user: user.id, channel: body.channel, to: address, on: connection)
                        } catch let error as DatabaseError where error.code == .uniqueViolation {
                            throw Self.taken(body.channel)
                        }
                        try Self.sendUndoLink(of: user, channel: body.channel, newAddress: address, on: connection)
                    } else {
                        try UserStore().markVerified(user: user.id, channel: body.channel, address: address, on: connection)
                    }
                    return .verified(try UserStore().find(id: user.id, on: connection)!)
                }
            }
            switch outcome {
            case .verified(let user):
                return try APIJSON.response(.ok, UserView(user))
            case .wrongCode(let left):
                throw APIError.invalid("that code is not right; \(left) \(left == 1 ? "try" : "tries") left", "code")
            case .exhausted:
                throw APIError(.tooManyRequests, code: .rateLimited, message: "too many wrong codes; ask for a new one",
                               headers: ["Retry-After": String(Self.resendInterval)])
            case .expired:
                throw APIError(.gone, code: .expired, message: "the code has expired; ask for a new one", field: "code")
            case .nonePending:
                throw APIError.invalid("no code is pending for that channel; ask for one first", "channel")
            }
        }
    }

    /// `POST /v1/me/contacts/undo {token}`: the link sent to the old address puts it back as it
    /// was, ends every session of the account (its streams close on every node) and drops any
    /// pending code; once, within 7 days. No session is needed: whoever took the account may
    /// have changed its password. 409 when another account has the old address by now.
    func addUndoRoute(to builder: inout Router.Builder) {
        let pool = auth.pool
        builder.add(.post, "/v1/me/contacts/undo", bodyLimit: 4 * 1024) { context in
            let body = try context.decodeJSON(UndoBody.self)
            let unknown = APIError(.notFound, code: .notFound, message: "no such link, or it was used already or has expired")
            guard let token = TenantToken(body.token, prefix: TenantToken.contactUndo) else { throw unknown }
            let undone = try await pool.withConnection { connection in
                try connection.withTenantTransaction(token.tenant) { connection -> Bool in
                    guard let undo = try ContactUndoStore().take(tokenHash: token.hash, on: connection) else { return false }
                    do {
                        try UserStore().switchAddress(user: undo.userID, channel: undo.channel, to: undo.oldAddress, verified: undo.oldVerified,
                                                      on: connection)
                    } catch let error as DatabaseError where error.code == .uniqueViolation {
                        throw Self.taken(undo.channel)
                    }
                    try ContactVerificationStore().remove(user: undo.userID, channel: undo.channel, on: connection)
                    _ = try UserStore().deleteSessions(of: undo.userID, tenant: token.tenant, on: connection)
                    return true
                }
            }
            guard undone else { throw unknown }
            return try APIJSON.response(.ok, ["status": "undone"])
        }
    }

    /// After a confirmed change, the old address (when it was proven) is told, with the link
    /// that undoes the change (template `address_changed`): a session taken from its owner cannot
    /// keep the account by moving it to another address.
    static func sendUndoLink(of user: User, channel: String, newAddress: String, on connection: PostgresConnection) throws {
        let (old, verified) = channel == "email" ? (user.email, user.emailVerified) : (user.phone, user.phoneVerified)
        guard let old, verified else { return }
        let (text, token) = TenantToken.generate(TenantToken.contactUndo, tenant: user.tenantID)
        try ContactUndoStore().create(tenant: user.tenantID, tokenHash: token.hash,
                                      undo: ContactUndo(userID: user.id, channel: channel, oldAddress: old, oldVerified: true, newAddress: newAddress),
                                      lifetime: undoLifetime, on: connection)
        try OutboxStore().enqueue(tenant: user.tenantID, channel: channel == "email" ? .email : .sms, recipient: old, template: .addressChanged,
                                  data: RawJSON("{\"channel\":\"\(channel)\",\"new_address\":\(JSONString.quote(masked(newAddress))),"
                                                + "\"token\":\"\(text)\",\"expires_in_days\":7}"),
                                  on: connection)
    }

    /// The user's address on a channel: 400 for an unknown channel or a missing address,
    /// 409 when it is verified already.
    static func address(of user: User, channel: String) throws(APIError) -> String {
        let address: String?
        let verified: Bool
        switch channel {
        case "email": (address, verified) = (user.email, user.emailVerified)
        case "phone": (address, verified) = (user.phone, user.phoneVerified)
        default:
            throw APIError.invalid("channel must be email or phone", "channel")
        }
        guard let address else {
            throw APIError.invalid("your account has no \(channel) to verify", "channel")
        }
        guard !verified else { throw APIError(.conflict, code: .conflict, message: "your \(channel) is verified already", field: "channel") }
        return address
    }

    /// Six random digits (`Secrets.randomDigits`).
    static func generateCode() -> String { Secrets.randomDigits(6) }

    static func taken(_ channel: String) -> APIError {
        APIError(.conflict, code: .conflict, message: "that \(channel == "email" ? "email address" : "phone number") belongs to another account",
                 field: channel)
    }

    /// `PATCH /v1/me {email?, phone?}`: a change of address starts. The new address gets a code
    /// (confirmed with `/v1/me/contacts/confirm`, which switches it), the old one, if any, a notice
    /// naming the new one only in part; the account keeps its old address until then. 409 when
    /// the address is another account's now (and again at confirmation, should it be taken
    /// meanwhile); 429 within a minute of the last code or past the day's codes.
    static func startChange(of user: User, channel: String, to address: String, limits: AbuseLimits, on connection: PostgresConnection) throws {
        try requireResendAllowed(user: user, channel: channel, on: connection)
        if let other = try UserStore().find(email: channel == "email" ? address : nil, phone: channel == "phone" ? address : nil, on: connection),
           other.id != user.id {
            throw taken(channel)
        }
        try sendCode(to: address, channel: channel, of: user, change: true, smsField: "phone", limits: limits, on: connection)
        if let old = channel == "email" ? user.email : user.phone,
           try OutsideBudget.allows(channel == "email" ? .email : .sms, to: old, tenant: user.tenantID, by: user, limits: limits, on: connection) {
            try OutboxStore().enqueue(tenant: user.tenantID, channel: channel == "email" ? .email : .sms, recipient: old,
                                      template: .addressChangeRequested,
                                      data: RawJSON("{\"channel\":\"\(channel)\",\"new_address\":\(JSONString.quote(masked(address)))}"),
                                      on: connection)
        }
    }

    /// 429 with `Retry-After` when a live code on the channel was sent less than a minute ago.
    static func requireResendAllowed(user: User, channel: String, on connection: PostgresConnection) throws {
        guard let pending = try ContactVerificationStore().pending(user: user.id, channel: channel, on: connection),
              !pending.expired, pending.age < resendInterval else { return }
        throw APIError(.tooManyRequests, code: .rateLimited, message: "a code was sent less than a minute ago",
                       headers: ["Retry-After": String(max(1, resendInterval - pending.age))])
    }

    /// A new 6-digit code for `address` on `channel` (template `verification`; `change`: it
    /// proves a new address), replacing any earlier one; counted against the user's codes of the
    /// day, and for a phone only where the tenant sends SMS (400 naming `smsField`).
    static func sendCode(to address: String, channel: String, of user: User, change: Bool, smsField: String, limits: AbuseLimits,
                         on connection: PostgresConnection) throws {
        if channel == "phone" { try Throttle.requireSMSAllowed(address, tenant: user.tenantID, field: smsField, on: connection) }
        try Throttle.count([RateLimit(RateLimitKey(.verifySend, user.tenantID.uuidString, user.id.uuidString), limit: limits.verificationCodesPerUserPerDay,
                                      window: Throttle.day)], "too many codes sent today; try again tomorrow", on: connection)
        // The one message that may go to an address not yet proven: the code that proves it.
        try OutsideBudget.require(channel == "email" ? .email : .sms, to: address, tenant: user.tenantID, by: user, limits: limits, on: connection)
        let code = generateCode()
        try ContactVerificationStore().replace(tenant: user.tenantID, user: user.id, channel: channel, address: address,
                                               codeHash: hash(code, user: user.id, channel: channel, address: address), lifetime: codeLifetime,
                                               on: connection)
        try OutboxStore().enqueue(tenant: user.tenantID, channel: channel == "email" ? .email : .sms, recipient: address, template: .verification,
                                  data: RawJSON("{\"code\":\"\(code)\",\"expires_in_s\":\(codeLifetime)\(change ? ",\"change\":true" : "")}"),
                                  on: connection)
    }

    /// An address shown in part: "a•••@example.org", "+45•••••12".
    static func masked(_ address: String) -> String {
        if let at = address.firstIndex(of: "@") {
            return String(address[..<at].prefix(1)) + "•••" + String(address[at...])
        }
        return String(address.prefix(3)) + String(repeating: "•", count: max(0, address.count - 5)) + String(address.suffix(2))
    }

    /// The stored form of a code, bound to the user, channel and address it was sent for.
    static func hash(_ code: String, user: UUID, channel: String, address: String) -> [UInt8] {
        Digest.sha256(Array("\(user.lowercasedText):\(channel):\(address):\(code)".utf8))
    }
}
