import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Groups and members": creating, listing, reading, editing and deleting groups. A group
/// the caller is not in is answered exactly like one that does not exist (404).
struct GroupRoutes: Sendable {
    let auth: Authentication
    let limits: AbuseLimits

    struct CreateBody: Decodable, KnownFields {
        let name: String
        let description: String?
        static let fieldNames: Set<String> = ["name", "description"]
    }

    struct PatchBody: Decodable, KnownFields {
        let name: String?
        let description: String?
        /// Absent: unchanged; null: no escalation.
        let escalateAfterSeconds: SettingChange<Int?>
        let nearbyMeters: Int?
        /// Absent: unchanged; null: the tenant's retention.
        let retentionDays: SettingChange<Int?>
        let feeds: FeedsBody?
        let drill: Bool?
        static let fieldNames: Set<String> = names(CodingKeys.self)

        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, description, feeds, drill
            case escalateAfterSeconds = "escalate_after_s"
            case nearbyMeters = "nearby_m"
            case retentionDays = "retention_days"
        }

        /// `{"enabled": bool, "min_severity"?: "info" | "amber" | "red"}`.
        struct FeedsBody: Decodable, KnownFields {
            let enabled: Bool
            let minSeverity: String?
            static let fieldNames: Set<String> = ["enabled", "min_severity"]
            enum CodingKeys: String, CodingKey { case enabled, minSeverity = "min_severity" }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            description = try container.decodeIfPresent(String.self, forKey: .description)
            escalateAfterSeconds = try container.decodeSetting(Int.self, forKey: .escalateAfterSeconds)
            nearbyMeters = try container.decodeIfPresent(Int.self, forKey: .nearbyMeters)
            retentionDays = try container.decodeSetting(Int.self, forKey: .retentionDays)
            feeds = try container.decodeIfPresent(FeedsBody.self, forKey: .feeds)
            drill = try container.decodeIfPresent(Bool.self, forKey: .drill)
        }
    }

    /// A group in the caller's list: enough to draw a chat list in one call.
    struct SummaryView: Encodable {
        @LowercaseID var id: UUID
        let name: String
        let role: String
        let lastSeq: Int64
        let openAlerts: Int
        let unread: Int
        let unreadAlerts: Int
        /// null in an empty group.
        @Null var lastMessage: LastMessageView?

        init(_ summary: GroupSummary) {
            id = summary.id
            name = summary.name
            role = summary.role
            lastSeq = summary.lastSeq
            openAlerts = summary.openAlerts
            unread = summary.unread
            unreadAlerts = summary.unreadAlerts
            lastMessage = summary.lastMessage.map(LastMessageView.init)
        }

        enum CodingKeys: String, CodingKey {
            case id, name, role, unread
            case lastSeq = "last_seq"
            case openAlerts = "open_alerts"
            case unreadAlerts = "unread_alerts"
            case lastMessage = "last_message"
        }
    }

    /// The newest message of a group, as its list shows it (the text cut to 140 characters).
    struct LastMessageView: Encodable {
        let seq: Int64
        let kind: String
        let text: String
        let authorName: String
        let createdAt: String

        init(_ message: LastMessage) {
            seq = message.seq
            kind = message.kind
            text = message.text
            authorName = message.authorName
            createdAt = message.createdAt
        }

        enum CodingKeys: String, CodingKey {
            case seq, kind, text
            case authorName = "author_name"
            case createdAt = "created_at"
        }
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/groups", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(CreateBody.self)
            let group = try await caller.run(CreateGroup(name: body.name, description: body.description, perDay: limits.groupsPerUserPerDay))
            return try APIJSON.response(.created, GroupView(group, role: .owner))
        }
        builder.add(.get, "/v1/groups", signedIn: auth) { context, caller in
            let limit = try context.limit()
            let after = try context.cursor(\.byName)
            let groups = try await caller.inTenant { user, connection in
                try GroupStore().groups(of: user.id, after: after, limit: limit, on: connection)
            }
            let next = groups.count == limit ? groups.last.map { ListCursor.write(name: $0.name, id: $0.id) } : nil
            return try APIJSON.response(.ok, Page(items: groups.map(SummaryView.init), next: next))
        }
        builder.add(.get, "/v1/groups/{gid:uuid}", signedIn: auth) { context, caller in
            let id = context.parameters.uuid("gid")!
            let (group, role) = try await caller.inGroup(id) { caller, connection in (try GroupStore().group(id: id, on: connection)!, caller.role) }
            return try APIJSON.response(.ok, GroupView(group, role: role))
        }
        builder.add(.patch, "/v1/groups/{gid:uuid}", bodyLimit: 16 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(PatchBody.self)
            var update = try UpdateGroup(group: context.parameters.uuid("gid")!, name: body.name, description: body.description,
                                         escalateAfterSeconds: body.escalateAfterSeconds, nearbyMeters: body.nearbyMeters,
                                         retentionDays: body.retentionDays)
            try update.takeFeeds(enabled: body.feeds?.enabled, minSeverity: body.feeds?.minSeverity, drill: body.drill)
            let (group, role) = try await caller.run(update)
            return try APIJSON.response(.ok, GroupView(group, role: role))
        }
        builder.add(.delete, "/v1/groups/{gid:uuid}", signedIn: auth) { context, caller in
            try await caller.run(DeleteGroup(group: context.parameters.uuid("gid")!))
            return HTTPResponse(status: .noContent)
        }
    }
}

/// A group as the caller sees it, with their role in it (API.md "Groups and members").
struct GroupView: Encodable {
    @LowercaseID var id: UUID
    let name: String
    let description: String
    let role: String
    let lastSeq: Int64
    let createdAt: Date
    /// null: no escalation.
    @Null var escalateAfterSeconds: Int?
    let nearbyMeters: Int
    /// null: the tenant's.
    @Null var retentionDays: Int?
    let oldestSeq: Int64
    let feeds: Feeds
    let drill: Bool

    struct Feeds: Encodable {
        let enabled: Bool
        let minSeverity: String
        enum CodingKeys: String, CodingKey { case enabled, minSeverity = "min_severity" }
    }

    enum CodingKeys: String, CodingKey {
        case id, name, description, role, feeds, drill
        case lastSeq = "last_seq"
        case createdAt = "created_at"
        case escalateAfterSeconds = "escalate_after_s"
        case nearbyMeters = "nearby_m"
        case retentionDays = "retention_days"
        case oldestSeq = "oldest_seq"
    }

    init(_ group: WatchGroup, role: Role) {
        id = group.id
        name = group.name
        description = group.description
        self.role = role.name
        lastSeq = group.lastSeq
        createdAt = group.createdAt
        escalateAfterSeconds = group.escalateAfterSeconds
        nearbyMeters = group.nearbyMeters
        retentionDays = group.retentionDays
        oldestSeq = group.oldestSeq
        feeds = Feeds(enabled: group.feeds.enabled, minSeverity: group.feeds.minSeverity)
        drill = group.drill
    }
}
