import Foundation
import RoostPersistence
import RoostProtocol

/// A user creates a group and owns it (counted against their daily limit).
struct CreateGroup: UserUseCase {
    let name: String
    let description: String
    /// Groups one user may create in a day (`ROOST_LIMIT_GROUPS_PER_DAY`).
    let perDay: Int

    init(name: String, description: String?, perDay: Int) throws(APIError) {
        self.name = try BoundedText.name(name, field: "name", range: 1...200)
        self.description = try description.map { value throws(APIError) in
            try BoundedText.validate(value, field: "description", range: 0...2000, allowNewlines: true)
        } ?? ""
        self.perDay = perDay
    }

    func run(by user: User, on connection: PostgresConnection) throws -> WatchGroup {
        try Throttle.count([RateLimit(RateLimitKey(.groupCreate, user.tenantID.uuidString, user.id.uuidString), limit: perDay, window: Throttle.day)],
                           "too many groups created today; try again tomorrow", on: connection)
        return try GroupStore().create(tenant: user.tenantID, owner: user.id, name: name, description: description, on: connection)
    }
}

/// The owner or an admin renames the group, changes its description, or its incident settings:
/// how long a red alert waits before it escalates (60–3600 s, or null for never) and how near
/// a home must be for the critical push (50–50,000 m); the owner alone, how many days the group
/// keeps its history (at most the tenant's; null: the tenant's); whether official warnings reach
/// the group and from which severity, and drill mode (a feed's Test and Exercise messages too).
struct UpdateGroup: GroupUseCase {
    let group: UUID
    let name: String?
    let description: String?
    let escalateAfterSeconds: SettingChange<Int?>
    let nearbyMeters: Int?
    let retentionDays: SettingChange<Int?>
    var feedsEnabled: Bool?
    var feedsMinSeverity: String?
    var drill: Bool?

    static let escalationRange = 60...3600
    static let nearbyRange = 50...50_000

    init(group: UUID, name: String?, description: String?, escalateAfterSeconds: SettingChange<Int?> = .unchanged,
         nearbyMeters: Int? = nil, retentionDays: SettingChange<Int?> = .unchanged) throws(APIError) {
        self.name = try name.map { value throws(APIError) in try BoundedText.name(value, field: "name", range: 1...200) }
        self.description = try description.map { value throws(APIError) in
            try BoundedText.validate(value, field: "description", range: 0...2000, allowNewlines: true)
        }
        if case .set(let seconds?) = escalateAfterSeconds, !Self.escalationRange.contains(seconds) {
            throw APIError.invalid("escalate_after_s is 60 to 3600, or null for no escalation", "escalate_after_s")
        }
        if let nearbyMeters, !Self.nearbyRange.contains(nearbyMeters) {
            throw APIError.invalid("nearby_m is 50 to 50000", "nearby_m")
        }
        if case .set(let days?) = retentionDays { try Retention.validate(days: days) }
        self.group = group
        self.escalateAfterSeconds = escalateAfterSeconds
        self.nearbyMeters = nearbyMeters
        self.retentionDays = retentionDays
    }

    /// The official warnings setting (`feeds: {enabled, min_severity?}`) and drill mode.
    mutating func takeFeeds(enabled: Bool?, minSeverity: String?, drill: Bool?) throws(APIError) {
        if let minSeverity, !AlertSeverity(minSeverity).isKnown {
            throw APIError.invalid("feeds.min_severity must be info, amber or red", "feeds.min_severity")
        }
        (feedsEnabled, feedsMinSeverity, self.drill) = (enabled, minSeverity, drill)
    }

    /// The group after the change, with the caller's role.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> (WatchGroup, Role) {
        try caller.requireManager("only the owner and admins can change the group")
        if case .set(let days) = retentionDays {
            try caller.requireOwner("only the owner can change how long the group keeps its history")
            try Retention.requireWithinTenant(days, tenant: caller.user.tenantID, on: connection)
        }
        try GroupStore().update(group: group, name: name, description: description, escalateAfterSeconds: escalateAfterSeconds,
                                nearbyMeters: nearbyMeters, retentionDays: retentionDays, feedsEnabled: feedsEnabled, feedsMinSeverity: feedsMinSeverity, drill: drill, on: connection)
        var data = "{\"description\":\(description.map(JSONString.quote) ?? "null"),\"name\":\(name.map(JSONString.quote) ?? "null")"
        // The settings appear only when they change (null is a value of escalate_after_s: never).
        if case .set(let seconds) = escalateAfterSeconds { data += ",\"escalate_after_s\":\(seconds.map(String.init) ?? "null")" }
        if let nearbyMeters { data += ",\"nearby_m\":\(nearbyMeters)" }
        if let feedsEnabled { data += ",\"feeds_enabled\":\(feedsEnabled)" }
        if let feedsMinSeverity { data += ",\"feeds_min_severity\":\(JSONString.quote(feedsMinSeverity))" }
        if let drill { data += ",\"drill\":\(drill)" }
        if case .set(let days) = retentionDays {
            data += ",\"retention_days\":\(days.map(String.init) ?? "null")"
            if days != nil { try RetentionStore().schedule(tenant: caller.user.tenantID, group: group, on: connection) }
        }
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .groupUpdated, actorType: .user,
                                   actorID: caller.user.id, data: RawJSON(data + "}"), on: connection)
        try Audit.record(caller, group: group, .groupUpdated, target: ("group", group.lowercasedText), data: data + "}", on: connection)
        return (try GroupStore().group(id: group, on: connection)!, caller.role)
    }
}

/// The owner deletes the group, its history with it; every stream following it is told.
struct DeleteGroup: GroupUseCase {
    let group: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireOwner("only the owner can delete the group")
        let name = try GroupStore().group(id: group, on: connection)?.name ?? ""
        try GroupStore().delete(group: group, on: connection)
        try Audit.record(caller, group: group, .groupDeleted, target: ("group", group.lowercasedText),
                         data: "{\"name\":\(JSONString.quote(name))}", on: connection)
    }
}

/// The owner makes a member an admin or an admin a member.
struct ChangeRole: GroupUseCase {
    let group: UUID
    let member: UUID
    let role: Role

    init(group: UUID, member: UUID, role: String) throws(APIError) {
        guard Role(role) == .admin || Role(role) == .member else {
            throw APIError.invalid("role must be admin or member (ownership moves with POST .../owner)", "role")
        }
        self.group = group
        self.member = member
        self.role = Role(role)
    }

    /// The member after the change.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Member {
        try caller.requireOwner("only the owner can change roles")
        let store = GroupStore()
        guard let current = try store.role(of: member, in: group, on: connection) else { throw APIError.noSuchMember }
        guard current != .owner else {
            throw APIError(.conflict, code: .conflict, message: "the owner's role changes only by transferring ownership")
        }
        if current != role {
            try store.setRole(role, of: member, in: group, on: connection)
            try RoleChanged(user: member, from: current, to: role).append(by: caller, group: group, on: connection)
        }
        return try store.member(member, of: group, on: connection)!
    }
}

/// A manager removes a member, or a member leaves (the member is the caller). The owner can
/// do neither: ownership is transferred or the group deleted. Only the owner removes an admin
/// (admins cannot remove each other, as only the owner makes one).
struct RemoveMember: GroupUseCase {
    let group: UUID
    let member: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        let leaving = member == caller.user.id
        guard let current = try GroupStore().role(of: member, in: group, on: connection) else { throw APIError.noSuchMember }
        if current == .owner {
            throw leaving
                ? APIError(.conflict, code: .conflict, message: "the owner cannot leave: transfer ownership or delete the group")
                : APIError.forbidden("the owner cannot be removed")
        }
        guard leaving || caller.isManager else { throw APIError.forbidden("only the owner and admins can remove members") }
        if current == .admin && !leaving { try caller.requireOwner("only the owner can remove an admin") }
        try GroupStore().removeMember(member, from: group, on: connection)
        try LiveLocationNotice.endAll(of: member, tenant: caller.user.tenantID, group: group, on: connection)
        let data = #"{"user_id":"\#(member.lowercasedText)"}"#
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: leaving ? .memberLeft : .memberRemoved,
                                   actorType: .user, actorID: caller.user.id, data: RawJSON(data), subject: member, on: connection)
        if !leaving { try Audit.record(caller, group: group, .memberRemoved, target: ("user", member.lowercasedText), on: connection) }
    }
}

/// The owner hands the group to another member and becomes an admin. Handing it to the
/// owner changes nothing.
struct TransferOwnership: GroupUseCase {
    let group: UUID
    let newOwner: UUID

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws {
        try caller.requireOwner("only the owner can transfer ownership")
        let store = GroupStore()
        guard let current = try store.role(of: newOwner, in: group, on: connection) else {
            throw APIError.invalid("the new owner must be a member", "user_id")
        }
        guard current != .owner else { return }
        // Demote first: at most one owner at any moment (memberships_one_owner_key).
        try store.setRole(.admin, of: caller.user.id, in: group, on: connection)
        try store.setRole(.owner, of: newOwner, in: group, on: connection)
        try RoleChanged(user: caller.user.id, from: .owner, to: .admin).append(by: caller, group: group, on: connection)
        try RoleChanged(user: newOwner, from: current, to: .owner).append(by: caller, group: group, on: connection)
    }
}

/// The `member.role_changed` event's data, written in one place.
struct RoleChanged {
    let user: UUID
    let from: Role
    let to: Role

    func append(by caller: GroupCaller, group: UUID, on connection: PostgresConnection) throws {
        let data = #"{"user_id":"\#(user.lowercasedText)","from":"\#(from.name)","to":"\#(to.name)"}"#
        try GroupEventLog().append(tenant: caller.user.tenantID, group: group, event: .memberRoleChanged, actorType: .user,
                                   actorID: caller.user.id, data: RawJSON(data), on: connection)
        try Audit.record(caller, group: group, .memberRoleChanged, target: ("user", user.lowercasedText),
                         data: #"{"from":"\#(from.name)","to":"\#(to.name)"}"#, on: connection)
    }
}

extension APIError {
    static let noSuchMember = APIError(.notFound, code: .notFound, message: "no such member")
}

