import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Group areas and CAP", the operator's half: the CAP feeds Roost polls for official
/// warnings (`GET/POST/DELETE /v1/admin/feeds[/{id}]`, and `POST .../poll` to poll one now).
/// Behind `ROOST_ADMIN_TOKEN`, as `TenantRoutes`. `roost feed` does the same from the shell.
enum FeedAdminRoutes {
    struct CreateBody: Decodable, KnownFields {
        let url: String
        let name: String?
        let tenants: Tenants
        let pollSeconds: Int?
        let sender: String?

        enum CodingKeys: String, CodingKey {
            case url, name, tenants, sender
            case pollSeconds = "poll_s"
        }
        static let fieldNames: Set<String> = ["url", "name", "tenants", "poll_s", "sender"]

        /// `"all"`, or a list of tenants' slugs.
        enum Tenants: Decodable {
            case all
            case some([String])

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let word = try? container.decode(String.self), word == "all" {
                    self = .all
                } else if let slugs = try? container.decode([String].self), !slugs.isEmpty, slugs.count <= 1000 {
                    self = .some(slugs)
                } else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "tenants is \"all\" or a list of tenants' slugs")
                }
            }
        }
    }

    struct FeedView: Encodable {
        @LowercaseID var id: UUID
        let url: String
        let name: String
        /// `"all"` or the slugs.
        let tenants: TenantsView
        let pollSeconds: Int
        @Null var sender: String?
        let nextPollAt: Date
        @Null var polledAt: Date?
        @Null var lastStatus: String?

        enum TenantsView: Encodable {
            case all
            case some([String])

            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                switch self {
                case .all: try container.encode("all")
                case .some(let slugs): try container.encode(slugs)
                }
            }
        }

        enum CodingKeys: String, CodingKey {
            case id, url, name, tenants, sender
            case pollSeconds = "poll_s"
            case nextPollAt = "next_poll_at"
            case polledAt = "polled_at"
            case lastStatus = "last_status"
        }

        init(_ feed: CAPFeedRow, slugs: [UUID: String]) {
            id = feed.id
            url = feed.url
            name = feed.name
            tenants = feed.tenants.map { .some($0.compactMap { slugs[$0] }) } ?? .all
            pollSeconds = feed.pollSeconds
            sender = feed.sender
            nextPollAt = feed.nextPollAt
            polledAt = feed.polledAt
            lastStatus = feed.lastStatus
        }
    }

    static let noSuchFeed = APIError(.notFound, code: .notFound, message: "no such feed")

    /// `minPollSeconds`: the shortest interval a feed may be polled at (`ROOST_FEED_MIN_POLL_S`).
    static func add(to builder: inout Router.Builder, pool: ConnectionPool, adminToken: String?, policy: OutboundPolicy, minPollSeconds: Int) {
        builder.add(.get, "/v1/admin/feeds") { context in
            try TenantRoutes.authorize(context, adminToken: adminToken)
            let views = try await pool.withConnection { connection in
                let slugs = try Self.slugs(on: connection)
                return try FeedStore().feeds(on: connection).map { FeedView($0, slugs: slugs) }
            }
            return try APIJSON.response(.ok, ["items": views])
        }
        builder.add(.post, "/v1/admin/feeds", bodyLimit: 64 * 1024) { context in
            try TenantRoutes.authorize(context, adminToken: adminToken)
            let body = try context.decodeJSON(CreateBody.self)
            let feed = try Self.validated(url: body.url, name: body.name, pollSeconds: body.pollSeconds, sender: body.sender, policy: policy,
                                          minPollSeconds: minPollSeconds)
            let view = try await pool.withConnection { connection in
                try connection.withTransaction { connection -> FeedView in
                    let slugs = try Self.slugs(on: connection)
                    var tenants: [UUID]?
                    if case .some(let named) = body.tenants {
                        let ids = Dictionary(slugs.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
                        tenants = try named.map { slug throws(APIError) in
                            guard let id = ids[slug] else { throw APIError.invalid("no tenant has the slug \(slug)", "tenants") }
                            return id
                        }
                    }
                    do {
                        let row = try FeedStore().add(url: feed.url, name: feed.name, tenants: tenants, pollSeconds: feed.poll,
                                                      sender: feed.sender, on: connection)
                        return FeedView(row, slugs: slugs)
                    } catch is FeedStore.Taken {
                        throw APIError(.conflict, code: .conflict, message: "a feed with this URL is configured already")
                    }
                }
            }
            return try APIJSON.response(.created, view)
        }
        builder.add(.get, "/v1/admin/feeds/{id:uuid}") { context in
            try TenantRoutes.authorize(context, adminToken: adminToken)
            let id = context.parameters.uuid("id")!
            let view = try await pool.withConnection { connection -> FeedView? in
                try FeedStore().feed(id, on: connection).map { FeedView($0, slugs: try Self.slugs(on: connection)) }
            }
            guard let view else { throw noSuchFeed }
            return try APIJSON.response(.ok, view)
        }
        builder.add(.post, "/v1/admin/feeds/{id:uuid}/poll") { context in
            try TenantRoutes.authorize(context, adminToken: adminToken)
            let id = context.parameters.uuid("id")!
            guard try await pool.withConnection({ try FeedStore().pollSoon(id, on: $0) }) else { throw noSuchFeed }
            return HTTPResponse(status: .accepted)
        }
        builder.add(.delete, "/v1/admin/feeds/{id:uuid}") { context in
            try TenantRoutes.authorize(context, adminToken: adminToken)
            guard try await pool.withConnection({ try FeedStore().remove(context.parameters.uuid("id")!, on: $0) }) else { throw noSuchFeed }
            return HTTPResponse(status: .noContent)
        }
    }

    /// The body's URL (one the operator may point Roost at), name, interval and sender, checked.
    static func validated(url text: String, name: String?, pollSeconds: Int?, sender: String?, policy: OutboundPolicy,
                          minPollSeconds: Int) throws(APIError) -> (url: String, name: String, poll: Int, sender: String?)
    {
        let url: OutboundURL
        do {
            url = try policy.url(text, from: .operator, schemes: ["https", "http"])
        } catch {
            throw APIError.invalid("url must be an http:// or https:// URL Roost can fetch: \(error)", "url")
        }
        guard text.utf8.count <= 2048 else { throw APIError.invalid("url is at most 2048 bytes", "url") }
        let name = try name.map { value throws(APIError) in try BoundedText.name(value, field: "name", range: 1...200) } ?? url.hostText
        let poll = pollSeconds ?? max(minPollSeconds, 300)
        guard (minPollSeconds...86_400).contains(poll) else {
            throw APIError.invalid("poll_s is \(minPollSeconds) to 86400: publishers ask to be polled no more often than every few minutes", "poll_s")
        }
        let sender = try sender.map { value throws(APIError) in try BoundedText.validate(value, field: "sender", range: 1...500) }
        return (text, name, poll, sender)
    }

    static func slugs(on connection: PostgresConnection) throws -> [UUID: String] {
        Dictionary(try TenantStore().list(on: connection).map { ($0.id, $0.slug) }, uniquingKeysWith: { first, _ in first })
    }
}
