import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Operator": `POST /v1/admin/tenants` and `GET /v1/admin/tenants`, plus
/// `PATCH /v1/admin/tenants/{slug}` (rename, switch registration: an invite-only tenant is
/// opened for its organisers' sign-up, then closed; or set how many days its groups keep their
/// history, `retention_days`, null for good), for whoever holds `ROOST_ADMIN_TOKEN`. With no token configured the operator API does not exist (404).
enum TenantRoutes {
    struct CreateBody: Decodable, KnownFields {
        let slug: String
        let name: String
        let registration: String?
        static let fieldNames: Set<String> = ["slug", "name", "registration"]
    }

    struct UpdateBody: Decodable, KnownFields {
        let name: String?
        let registration: String?
        /// Absent: unchanged; null: kept for good.
        let retentionDays: SettingChange<Int?>
        let locale: String?
        static let fieldNames: Set<String> = names(CodingKeys.self)

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, registration, locale
            case retentionDays = "retention_days"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            locale = try container.decodeIfPresent(String.self, forKey: .locale)
            registration = try container.decodeIfPresent(String.self, forKey: .registration)
            retentionDays = try container.decodeSetting(Int.self, forKey: .retentionDays)
        }
    }

    struct TenantView: Encodable {
        @LowercaseID var id: UUID
        let slug: String
        let name: String
        let registration: String
        let createdAt: Date
        /// null: kept for good.
        @Null var retentionDays: Int?
        let locale: String

        init(_ tenant: Tenant) {
            id = tenant.id
            slug = tenant.slug
            name = tenant.name
            registration = tenant.registration.rawValue
            createdAt = tenant.createdAt
            retentionDays = tenant.retentionDays
            locale = tenant.locale
        }

        enum CodingKeys: String, CodingKey {
            case id, slug, name, registration, locale
            case createdAt = "created_at"
            case retentionDays = "retention_days"
        }
    }

    /// 404 when the operator API is off (no token configured), 401 unless the request bears the token.
    static func authorize(_ context: RequestContext, adminToken: String?) throws(APIError) {
        guard let adminToken else {
            throw APIError(.notFound, code: .notFound,
                           message: "the operator API is off on this server: start it with ROOST_ADMIN_TOKEN set (at least 32 characters)")
        }
        guard let token = context.bearerToken,
              Secrets.constantTimeEqual(Digest.sha256(Array(token.utf8)), Digest.sha256(Array(adminToken.utf8))) else {
            throw APIError(.unauthorized, code: .unauthenticated, message: "a valid operator token is required",
                           headers: ["WWW-Authenticate": "Bearer"])
        }
    }

    static func add(to builder: inout Router.Builder, pool: ConnectionPool, adminToken: String?) {
        let authorize: @Sendable (RequestContext) throws(APIError) -> Void = { (context: RequestContext) throws(APIError) in
            try Self.authorize(context, adminToken: adminToken)
        }

        builder.add(.post, "/v1/admin/tenants", bodyLimit: 16 * 1024) { context in
            try authorize(context)
            let body = try context.decodeJSON(CreateBody.self)
            guard TenantSlug(body.slug) != nil else { throw APIError.invalid("slug must be \(TenantSlug.rule)", "slug") }
            let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
            try validate(name: name)
            let registration = try parse(registration: body.registration ?? "open")
            do {
                let tenant = try await pool.withConnection {
                    try TenantStore().create(slug: body.slug, name: name, registration: registration, on: $0)
                }
                return try APIJSON.response(.created, TenantView(tenant))
            } catch let error as DatabaseError where error.code == .uniqueViolation {
                throw APIError(.conflict, code: .conflict, message: "a tenant with slug '\(body.slug)' already exists", field: "slug")
            }
        }

        builder.add(.patch, "/v1/admin/tenants/{slug}", bodyLimit: 16 * 1024) { context in
            try authorize(context)
            let body = try context.decodeJSON(UpdateBody.self)
            let slug = context.parameters["slug"] ?? ""
            let name = body.name?.trimmingCharacters(in: .whitespacesAndNewlines)
            if let name { try validate(name: name) }
            let registration = try body.registration.map { value throws(APIError) in try parse(registration: value) }
            if case .set(let days?) = body.retentionDays { try Retention.validate(days: days) }
            if let locale = body.locale, !MessageLocale.shipped.contains(locale) {
                throw APIError.invalid("locale must be one of \(MessageLocale.shipped.sorted().joined(separator: ", "))", "locale")
            }
            let notFound = APIError(.notFound, code: .notFound, message: "no such tenant")
            guard TenantSlug(slug) != nil,
                  let tenant = try await pool.withConnection({ connection in
                      try connection.withTransaction { connection -> Tenant? in
                          if case .set(let days) = body.retentionDays, try Retention.setTenant(slug: slug, days: days, on: connection) == nil {
                              return nil
                          }
                          return try TenantStore().update(slug: slug, name: name, registration: registration, locale: body.locale, on: connection)
                      }
                  }) else { throw notFound }
            return try APIJSON.response(.ok, TenantView(tenant))
        }

        // The default area of the tenant's groups (those that set none of their own).
        builder.add(.get, "/v1/admin/tenants/{slug}/area") { context in
            try authorize(context)
            let slug = context.parameters["slug"] ?? ""
            guard TenantSlug(slug) != nil, case .some(let area) = try await pool.withConnection({ try TenantStore().defaultArea(slug: slug, on: $0) }) else {
                throw APIError(.notFound, code: .notFound, message: "no such tenant")
            }
            return .json(.ok, Array("{\"default_area\":\(area ?? "null")}".utf8))
        }
        builder.add(.put, "/v1/admin/tenants/{slug}/area", bodyLimit: 32 * 1024) { context in
            try authorize(context)
            let slug = context.parameters["slug"] ?? ""
            let area = try context.decodeJSON(AreaBody.self).validated()
            guard TenantSlug(slug) != nil, try await pool.withConnection({ try TenantStore().setDefaultArea(slug: slug, to: area.jsonText, on: $0) }) else {
                throw APIError(.notFound, code: .notFound, message: "no such tenant")
            }
            return .json(.ok, Array("{\"default_area\":\(area.jsonText)}".utf8))
        }
        builder.add(.delete, "/v1/admin/tenants/{slug}/area") { context in
            try authorize(context)
            let slug = context.parameters["slug"] ?? ""
            guard TenantSlug(slug) != nil, try await pool.withConnection({ try TenantStore().setDefaultArea(slug: slug, to: nil, on: $0) }) else {
                throw APIError(.notFound, code: .notFound, message: "no such tenant")
            }
            return HTTPResponse(status: .noContent)
        }

        builder.add(.get, "/v1/admin/tenants") { context in
            try authorize(context)
            let limit = try context.limit()
            let after = context.request.target.queryValue("cursor")
            let tenants = try await pool.withConnection { try TenantStore().list(after: after, limit: limit + 1, on: $0) }
            let page = Array(tenants.prefix(limit))
            return try APIJSON.response(.ok, Page(items: page.map(TenantView.init), next: tenants.count > limit ? page.last?.slug : nil))
        }
    }

    static func validate(name: String) throws(APIError) {
        guard (1...200).contains(name.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.invalid("name must be 1 to 200 characters, no control characters", "name")
        }
    }

    static func parse(registration: String) throws(APIError) -> Tenant.Registration {
        guard let parsed = Tenant.Registration(rawValue: registration) else {
            throw APIError.invalid("registration must be open or invite_only", "registration")
        }
        return parsed
    }
}
