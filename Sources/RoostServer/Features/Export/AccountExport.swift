import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// `GET /v1/me/export` (API.md "Accounts"; GDPR articles 15 and 20): one JSON document of what
/// the account holds, streamed (`HTTPResponse.streamed`) a page at a time, so memory stays
/// the same however long the history:
///
///     {"exported_at", "user", "home", "memberships": [...], "devices": [...] (tokens masked),
///      "sessions": [...], "emergency_contacts": [...], "checkins": [...],
///      "media": [...] (their uploads, with a signed URL each), "answers": [...], "messages": [...]}
///
/// Each page is read in a transaction of its own that checks the session is still live (an
/// export stops when its session ends) and reads for the account (nothing hidden from them).
/// 5 exports per account an hour.
struct AccountExportRoutes: Sendable {
    let auth: Authentication
    static let perHour = 5

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/me/export", signedIn: auth) { _, caller in
            let user = try await caller.inTenant { user, connection in
                try Throttle.count([RateLimit(RateLimitKey(.export, user.tenantID.uuidString, user.id.uuidString), limit: Self.perHour, window: Throttle.hour)],
                                   "too many exports this hour; try again later", on: connection)
                return user
            }
            let day = ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
            return .streamed(.ok, headers: ["Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store",
                                            "Content-Disposition": "attachment; filename=\"roost-export-\(day).json\""],
                             AccountExport(pool: auth.pool, user: user, tokenHash: caller.token.hash))
        }
    }
}

/// The export's pieces, in order: the head (everything short), then each long list a page at
/// a time, then the closing brace.
actor AccountExport: ResponseBodySource {
    let pool: ConnectionPool
    let user: User
    let tokenHash: [UInt8]
    static let pageSize = 500

    private enum Part {
        case head
        case checkins(after: NewestFirst?, first: Bool)
        case media(after: UUID?, first: Bool)
        case answers(after: (group: UUID, seq: Int64)?, first: Bool)
        case messages(after: (group: UUID, seq: Int64)?, first: Bool)
        case done
    }
    private var part = Part.head

    init(pool: ConnectionPool, user: User, tokenHash: [UInt8]) {
        self.pool = pool
        self.user = user
        self.tokenHash = tokenHash
    }

    static let sessionEnded = APIError(.unauthorized, code: .unauthenticated, message: "the session ended during the export")

    /// One page in a transaction of the account's tenant, for the account, while its session lives.
    private func page<Value: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> Value) async throws -> Value {
        let (tenant, user, hash) = (user.tenantID, user.id, Digest.hex(tokenHash))
        return try await pool.withConnection { connection in
            try connection.withTenantTransaction(tenant) { connection in
                guard try UserStore().sessionIsActive(tokenHashHex: hash, on: connection) else { throw Self.sessionEnded }
                try connection.setViewer(user)
                return try body(connection)
            }
        }
    }

    /// `items` as the continuation of a JSON array (a comma before each but the array's first).
    private static func items(_ items: [String], first: Bool) -> String {
        (first ? "" : (items.isEmpty ? "" : ",")) + items.joined(separator: ",")
    }

    func next() async throws -> [UInt8]? {
        switch part {
        case .head:
            let user = self.user
            let head = try await page { connection -> String in
                let home = try UserStore().home(user: user.id, on: connection)
                let devices = try DeviceStore().list(user: user.id, on: connection).map { device in
                    "{\"id\":\"\(device.id.lowercasedText)\",\"platform\":\(JSONString.quote(device.platform)),"
                        + "\"token\":\(JSONString.quote(String(device.token.prefix(6)) + "…")),\"created_at\":\(JSONString.quote(APIJSON.time(device.createdAt)))}"
                }
                let sessions = try UserStore().sessions(of: user.id, on: connection).map { session in
                    "{\"id\":\"\(session.id.lowercasedText)\",\"created_at\":\(JSONString.quote(APIJSON.time(session.createdAt))),"
                        + "\"last_used_at\":\(JSONString.quote(APIJSON.time(session.lastUsedAt))),"
                        + "\"client\":\(session.client.map(JSONString.quote) ?? "null"),\"address\":\(session.network.map(JSONString.quote) ?? "null")}"
                }
                let contacts = try OutsideContactStore.emergency.contacts(owner: user.id, after: nil, limit: 100, on: connection)
                    .map { String(decoding: try APIJSON.encode(OutsideContactView(contact: $0)), as: UTF8.self) }
                return "{\"exported_at\":\(JSONString.quote(APIJSON.time(Date()))),"
                    + "\"user\":\(String(decoding: try APIJSON.encode(UserView(user)), as: UTF8.self)),"
                    + "\"home\":\(String(decoding: try APIJSON.encode(home), as: UTF8.self)),"
                    + "\"memberships\":[\(try ExportStore().memberships(of: user.id, on: connection).joined(separator: ","))],"
                    + "\"devices\":[\(devices.joined(separator: ","))],\"sessions\":[\(sessions.joined(separator: ","))],"
                    + "\"emergency_contacts\":[\(contacts.joined(separator: ","))],\"checkins\":["
            }
            part = .checkins(after: nil, first: true)
            return Array(head.utf8)
        case .checkins(let after, let first):
            let user = self.user
            let rows = try await page { try CheckinStore().list(user: user.id, status: nil, after: after, limit: Self.pageSize, on: $0) }
            let json = try rows.map { String(decoding: try APIJSON.encode(CheckinView(checkin: $0)), as: UTF8.self) }
            if rows.count < Self.pageSize {
                part = .media(after: nil, first: true)
                return Array((Self.items(json, first: first) + "],\"media\":[").utf8)
            }
            part = .checkins(after: rows.last.map { NewestFirst($0.createdAt, $0.id) }, first: false)
            return Array(Self.items(json, first: first).utf8)
        case .media(let after, let first):
            let user = self.user
            let rows = try await page { try ExportStore().media(of: user.id, after: after, limit: Self.pageSize, on: $0) }
            if rows.count < Self.pageSize {
                part = .answers(after: nil, first: true)
                return Array((Self.items(rows.map(\.json), first: first) + "],\"answers\":[").utf8)
            }
            part = .media(after: rows.last?.id, first: false)
            return Array(Self.items(rows.map(\.json), first: first).utf8)
        case .answers(let after, let first):
            let user = self.user
            let rows = try await page { try ExportStore().answers(of: user.id, after: after, limit: Self.pageSize, on: $0) }
            if rows.count < Self.pageSize {
                part = .messages(after: nil, first: true)
                return Array((Self.items(rows.map(\.json), first: first) + "],\"messages\":[").utf8)
            }
            part = .answers(after: rows.last.map { ($0.group, $0.seq) }, first: false)
            return Array(Self.items(rows.map(\.json), first: first).utf8)
        case .messages(let after, let first):
            let user = self.user
            let rows = try await page { try ExportStore().messages(authoredBy: user.id, after: after, limit: Self.pageSize, on: $0) }
            let items = rows.items.isEmpty ? [] : [rows.items]
            if rows.count < Self.pageSize {
                part = .done
                return Array((Self.items(items, first: first) + "]}").utf8)
            }
            part = .messages(after: rows.last, first: false)
            return Array(Self.items(items, first: first).utf8)
        case .done:
            return nil
        }
    }
}
