import Foundation
import RoostPersistence
import RoostProtocol

/// A member starts a check-in in one of their groups: a deadline by which they promise to
/// check in, with a note and a place. At most `maxActive` at once.
struct StartCheckin: GroupUseCase {
    static let maxActive = 5

    let group: UUID
    let seconds: Double
    let note: String
    let location: String?

    init(group: UUID, seconds: Double, note: String?, location: Location?) throws(APIError) {
        self.note = try BoundedText.validate(note ?? "", field: "note", range: 0...1000, allowNewlines: true)
        self.location = try location?.validatedJSON()
        self.group = group
        self.seconds = seconds
    }

    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> Checkin {
        let store = CheckinStore()
        guard try store.activeCount(user: caller.user.id, on: connection) < Self.maxActive else {
            throw APIError(.conflict, code: "conflict", message: "at most \(Self.maxActive) active check-ins; complete one first")
        }
        return try store.create(tenant: caller.user.tenantID, group: group, user: caller.user.id, note: note,
                                location: location, dueInSeconds: seconds, on: connection)
    }
}

/// A change a member makes to one of their own active check-ins. Only its owner sees or
/// touches a check-in: anyone else gets 404, as for one that does not exist.
protocol OwnCheckinChange: UserUseCase {
    var checkin: UUID { get }
    func change(_ checkin: Checkin, by user: User, on connection: PostgresConnection) throws -> Output
}

extension OwnCheckinChange {
    func run(by user: User, on connection: PostgresConnection) throws -> Output {
        guard let found = try CheckinStore().mine(checkin, user: user.id, on: connection) else { throw APIError.noSuchCheckin }
        guard found.status == "active" else { throw APIError(.conflict, code: "conflict", message: "the check-in has ended") }
        return try change(found, by: user, on: connection)
    }
}

/// Where the member is now (the alert, if one is raised, carries the last place).
struct ShareCheckinLocation: OwnCheckinChange {
    typealias Output = Void
    let checkin: UUID
    let location: String

    init(checkin: UUID, location: Location) throws(APIError) {
        self.checkin = checkin
        self.location = try location.validatedJSON()
    }

    func change(_ checkin: Checkin, by user: User, on connection: PostgresConnection) throws {
        try CheckinStore().setLocation(checkin.id, location: location, on: connection)
    }
}

/// A new deadline, counted from now.
struct ExtendCheckin: OwnCheckinChange {
    typealias Output = Checkin
    let checkin: UUID
    let seconds: Double

    func change(_ checkin: Checkin, by user: User, on connection: PostgresConnection) throws -> Checkin {
        try CheckinStore().extend(checkin.id, dueInSeconds: seconds, on: connection)
    }
}

/// The member checks in: "home safe", for the group to see (unless they have left it meanwhile).
struct CompleteCheckin: OwnCheckinChange {
    typealias Output = Checkin
    let checkin: UUID

    func change(_ checkin: Checkin, by user: User, on connection: PostgresConnection) throws -> Checkin {
        let ended = try CheckinStore().end(checkin.id, status: "completed", on: connection)
        if try GroupStore().role(of: user.id, in: checkin.groupID, on: connection) != nil {
            let data = "{\"checkin_id\":\"\(checkin.id.uuidString.lowercased())\",\"user_id\":\"\(user.id.uuidString.lowercased())\","
                + "\"display_name\":\(JSONString.quote(user.displayName))}"
            try GroupEventLog().append(tenant: user.tenantID, group: checkin.groupID, event: .checkinCompleted, actorType: "user",
                                       actorID: user.id, data: RawJSON(data), on: connection)
        }
        return ended
    }
}

extension APIError {
    static let noSuchCheckin = APIError(.notFound, code: "not_found", message: "no such check-in")
}
