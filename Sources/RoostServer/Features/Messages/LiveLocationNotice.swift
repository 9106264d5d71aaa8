import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// The `location.updated` and `location.ended` notices, written in one place.
enum LiveLocationNotice {
    private static func updated(tenant: UUID, group: UUID, seq: Int64, point: LivePoint, on connection: PostgresConnection) throws {
        func number(_ value: Double?) -> String { value.map { String(describing: $0) } ?? "null" }
        let data = "{\"group_id\":\"\(group.lowercasedText)\",\"seq\":\(seq),\"user_id\":\"\(point.userID.lowercasedText)\","
            + "\"lat\":\(number(point.lat)),\"lon\":\(number(point.lon)),\"accuracy_m\":\(number(point.accuracyM)),"
            + "\"battery\":\(point.battery.map(String.init) ?? "null"),"
            + "\"at\":\"\(APIJSON.time(point.at))\"}"
        try GroupEventLog.notifyGroup(tenant: tenant, group: group, event: .locationUpdated, data: data,
                                      hiddenFrom: try MessageStore().hiddenFrom(group: group, seq: seq, on: connection), on: connection)
    }

    /// Tells the group a sharer's point now and arms the end of the sharing an idle hour
    /// after the point: what a point does when it goes out, at once or coalesced.
    static func tell(_ point: LivePoint, tenant: UUID, group: UUID, seq: Int64, now: Date, on connection: PostgresConnection) throws {
        let store = LiveLocationStore()
        try updated(tenant: tenant, group: group, seq: seq, point: point, on: connection)
        try store.markNoticed(group: group, seq: seq, user: point.userID, at: now, on: connection)
        try store.schedule(tenant: tenant, group: group, seq: seq, user: point.userID,
                           due: point.at.addingTimeInterval(LiveLocationPolicy.idleLimit), flush: false, on: connection)
    }

    /// `reason`: `closed` (the alert closed), `idle` (an hour without an update), `left` (the
    /// sharer left the group or was removed) or `answer_changed` (a helper is no longer on
    /// their way).
    static func ended(tenant: UUID, group: UUID, seq: Int64, user: UUID, reason: String, on connection: PostgresConnection) throws {
        let data = "{\"group_id\":\"\(group.lowercasedText)\",\"seq\":\(seq),\"user_id\":\"\(user.lowercasedText)\","
            + "\"reason\":\"\(reason)\"}"
        try GroupEventLog.notifyGroup(tenant: tenant, group: group, event: .locationEnded, data: data,
                                      hiddenFrom: try MessageStore().hiddenFrom(group: group, seq: seq, on: connection), on: connection)
    }

    /// A sharer who left the group shares nothing there any more.
    static func endAll(of user: UUID, tenant: UUID, group: UUID, on connection: PostgresConnection) throws {
        for seq in try LiveLocationStore().endAll(of: user, tenant: tenant, group: group, on: connection) {
            try ended(tenant: tenant, group: group, seq: seq, user: user, reason: "left", on: connection)
        }
    }

    /// A helper who answered something other than `on_my_way` stops sharing (the author never
    /// does by answering).
    static func endForAnswer(_ response: String, user: UUID, author: UUID?, tenant: UUID, group: UUID, seq: Int64,
                             on connection: PostgresConnection) throws {
        guard response != "on_my_way", user != author,
              try LiveLocationStore().end(tenant: tenant, group: group, seq: seq, user: user, on: connection) else { return }
        try ended(tenant: tenant, group: group, seq: seq, user: user, reason: "answer_changed", on: connection)
    }

    /// Ends every sharing of an alert that just closed, telling the group.
    static func endAll(tenant: UUID, group: UUID, seq: Int64, on connection: PostgresConnection) throws {
        for user in try LiveLocationStore().endAll(tenant: tenant, group: group, seq: seq, on: connection) {
            try ended(tenant: tenant, group: group, seq: seq, user: user, reason: "closed", on: connection)
        }
    }
}

/// When a live sharer's point is told to the group (API.md "Incidents"): at most one
/// `location.updated` per sharer per `minimumInterval`, a point arriving sooner waits for the
/// end of the interval and is replaced by any newer one meanwhile (the newest wins), and the
/// next interval starts at that end (told by the scheduler's next round, up to its tick later,
/// it may reach clients a little less than an interval before the next point); a sharing
/// with no update for `idleLimit` ends. Pure functions of the times, tested without waiting.
enum LiveLocationPolicy {
    static let minimumInterval: TimeInterval = 2
    static let idleLimit: TimeInterval = 3600

    enum Update: Equatable {
        case noticeNow
        /// Told at `until` with whatever point is newest then.
        case coalesce(until: Date)
    }

    static func onUpdate(lastNotice: Date?, now: Date) -> Update {
        guard let lastNotice else { return .noticeNow }
        let next = lastNotice.addingTimeInterval(minimumInterval)
        return now >= next ? .noticeNow : .coalesce(until: next)
    }

    enum Job: Equatable {
        /// Tell the newest point now.
        case notice
        /// The sharing has been idle for the limit: end it.
        case end
        case wait(until: Date)
    }

    static func onJob(flush: Bool, pointAt: Date, now: Date) -> Job {
        if flush { return .notice }
        let idleEnd = pointAt.addingTimeInterval(idleLimit)
        return now >= idleEnd ? .end : .wait(until: idleEnd)
    }
}
