import Foundation
import RoostPersistence
import RoostProtocol

/// What reaches people outside the app about an alert's life (API.md "Incidents"), queued in
/// the transaction of the change that causes it and rate-limited per alert, so a member who
/// flips their answer or a manager who closes and reopens an alert cannot flood phones: past
/// a limit the change is still made and is an event as always, only the push is left out.
enum AlertPushes {
    /// `alert_response` pushes to an alert's author per responder and alert in an hour.
    static let responsesPerResponderPerHour = 5
    /// All clears and re-pushes of one alert in an hour.
    static let statusPushesPerAlertPerHour = 3

    /// An answer or a reply to an alert: its author (a user, not the responder) hears of it.
    static func response(group: UUID, seq: Int64, author: UUID?, responder: User, response: String?, note: String?,
                         reply: (seq: Int64, text: String)?, on connection: PostgresConnection) throws {
        guard let author, author != responder.id else { return }
        let key = RateLimitKey(.alertResponse, responder.tenantID.uuidString, group.uuidString, seq, responder.id.uuidString)
        guard try allowed(RateLimit(key, limit: responsesPerResponderPerHour, window: Throttle.hour), on: connection) else { return }
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let replyJSON = reply.map { "{\"seq\":\($0.seq),\"text\":\(JSONString.quote(String($0.text.prefix(140))))}" } ?? "null"
        let data = "{\"group_id\":\"\(group.lowercasedText)\",\"group_name\":\(JSONString.quote(groupName)),\"seq\":\(seq),"
            + "\"responder\":{\"id\":\"\(responder.id.lowercasedText)\",\"display_name\":\(JSONString.quote(responder.displayName))},"
            + "\"response\":\(response.map(JSONString.quote) ?? "null"),\"note\":\(note.map(JSONString.quote) ?? "null"),\"reply\":\(replyJSON)}"
        try OutboxStore().enqueuePushes(to: author, template: .alertResponse, data: RawJSON(data), on: connection)
    }

    /// The alert was closed (`alert_closed`, the all clear, with the resolution) or reopened
    /// (`alert` again, with the alert as it is now), to everyone it was pushed to.
    static func statusChanged(group: UUID, seq: Int64, closed: Bool, alert: String, tenant: UUID, on connection: PostgresConnection) throws {
        let key = RateLimitKey(.alertStatus, tenant.uuidString, group.uuidString, seq)
        guard try allowed(RateLimit(key, limit: statusPushesPerAlertPerHour, window: Throttle.hour), on: connection) else { return }
        let groupName = try GroupStore().group(id: group, on: connection)?.name ?? ""
        let data = "{\"group_id\":\"\(group.lowercasedText)\",\"group_name\":\(JSONString.quote(groupName)),\"seq\":\(seq),\"alert\":\(alert)}"
        try OutboxStore().enqueueRecipientPushes(group: group, seq: seq, template: closed ? .alertClosed : .alert, data: RawJSON(data),
                                                 on: connection)
    }

    /// Counts a push against its limits: false (and nothing counted) when one is used up.
    static func allowed(_ limits: RateLimit..., on connection: PostgresConnection) throws -> Bool {
        do {
            try RateLimitStore().count(limits, on: connection)
            return true
        } catch is RateLimitStore.UsedUp {
            return false
        }
    }
}
