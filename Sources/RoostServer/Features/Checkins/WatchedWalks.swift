import Foundation
import RoostPersistence
import RoostProtocol

/// What a group's watchers see of the walks it watches: the list ("walking now": who, the
/// note, the deadline, the status, the newest place, the battery and the trail), and a
/// `checkin.moved` notice to the group's streams for each new trail point.
struct ListWatchedWalks: GroupUseCase {
    let group: UUID
    /// Walks listed at once (a member has at most `StartCheckin.maxWalking`).
    static let limit = 100
    /// Trail points per walk, spread over the whole trail.
    static let trailPoints = 200

    /// `{"items":[walk...]}` as JSON text, soonest due first.
    func run(by caller: GroupCaller, on connection: PostgresConnection) throws -> String {
        let items = try CheckinStore().watchedJSON(group: group, limit: Self.limit, trailPoints: Self.trailPoints, on: connection)
        return "{\"items\":[" + items.joined(separator: ",") + "]}"
    }
}

enum WatchedWalks {
    /// The walker's new trail point, to each watching group they are still in. Trail points are
    /// at most one per `CheckinPolicy.trailSpacing`, so a walker posting places as fast as they
    /// can still moves their groups' streams no faster than that.
    static func moved(_ checkin: Checkin, to location: Location, battery: Int?, at: Date, tenant: UUID,
                      on connection: PostgresConnection) throws {
        func number(_ value: Double?) -> String { value.map { String(describing: $0) } ?? "null" }
        for watcher in try CheckinAlerts.groups(of: checkin, on: connection) {
            let data = "{\"group_id\":\"\(watcher.group.lowercasedText)\",\"checkin_id\":\"\(checkin.id.lowercasedText)\","
                + "\"user_id\":\"\(checkin.userID.lowercasedText)\",\"lat\":\(number(location.lat)),\"lon\":\(number(location.lon)),"
                + "\"accuracy_m\":\(number(location.accuracyM)),\"battery\":\(battery.map(String.init) ?? "null"),"
                + "\"at\":\"\(APIJSON.time(at))\"}"
            try GroupEventLog.notifyGroup(tenant: tenant, group: watcher.group, event: .checkinMoved, data: data, on: connection)
        }
    }
}
