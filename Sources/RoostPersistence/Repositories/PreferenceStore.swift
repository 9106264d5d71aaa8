import Foundation

/// What a member wants to hear of, and when (API.md "Outbound delivery"): one row of
/// `user_preferences`, defaults when there is none.
public struct NotificationPreferences: Sendable, Equatable {
    public struct QuietHours: Sendable, Equatable {
        /// `HH:MM`, local to `timeZone`.
        public var start: String
        public var end: String
        /// An IANA name, e.g. `Europe/Copenhagen`.
        public var timeZone: String

        public init(start: String, end: String, timeZone: String) {
            self.start = start
            self.end = end
            self.timeZone = timeZone
        }
    }

    public var pushChat = false
    public var pushAmber = true
    public var pushRed = true
    public var pushResponses = true
    public var quietHours: QuietHours?
    public var fallbackEmail = true
    public var fallbackSMS = true
    public var shareLocationOnUnansweredRequest = false

    public init() {}
}

/// Members' notification preferences, in a tenant transaction.
public struct PreferenceStore: Sendable {
    public init() {}

    public func load(_ user: UUID, on connection: PostgresConnection) throws -> NotificationPreferences {
        guard let row = try connection.query("""
            SELECT push_chat, push_amber, push_red, push_responses, to_char(quiet_start, 'HH24:MI') AS quiet_start,
                   to_char(quiet_end, 'HH24:MI') AS quiet_end, quiet_time_zone, fallback_email, fallback_sms,
                   share_location_on_unanswered_request AS share
            FROM user_preferences WHERE user_id = \(user)
            """).first else { return NotificationPreferences() }
        var preferences = NotificationPreferences()
        preferences.pushChat = try row.decode(Bool.self, "push_chat")
        preferences.pushAmber = try row.decode(Bool.self, "push_amber")
        preferences.pushRed = try row.decode(Bool.self, "push_red")
        preferences.pushResponses = try row.decode(Bool.self, "push_responses")
        if let start = try row.decode(String?.self, "quiet_start"), let end = try row.decode(String?.self, "quiet_end"),
           let zone = try row.decode(String?.self, "quiet_time_zone") {
            preferences.quietHours = .init(start: start, end: end, timeZone: zone)
        }
        preferences.fallbackEmail = try row.decode(Bool.self, "fallback_email")
        preferences.fallbackSMS = try row.decode(Bool.self, "fallback_sms")
        preferences.shareLocationOnUnansweredRequest = try row.decode(Bool.self, "share")
        return preferences
    }

    public func save(_ preferences: NotificationPreferences, tenant: UUID, user: UUID, on connection: PostgresConnection) throws {
        let quiet = preferences.quietHours
        try connection.query("""
            INSERT INTO user_preferences (tenant_id, user_id, push_chat, push_amber, push_red, push_responses, quiet_start, quiet_end,
                                          quiet_time_zone, fallback_email, fallback_sms, share_location_on_unanswered_request)
            VALUES (\(tenant), \(user), \(preferences.pushChat), \(preferences.pushAmber), \(preferences.pushRed), \(preferences.pushResponses),
                    \(quiet?.start)::time, \(quiet?.end)::time, \(quiet?.timeZone), \(preferences.fallbackEmail), \(preferences.fallbackSMS),
                    \(preferences.shareLocationOnUnansweredRequest))
            ON CONFLICT (tenant_id, user_id) DO UPDATE SET
                push_chat = excluded.push_chat, push_amber = excluded.push_amber, push_red = excluded.push_red,
                push_responses = excluded.push_responses, quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end,
                quiet_time_zone = excluded.quiet_time_zone, fallback_email = excluded.fallback_email, fallback_sms = excluded.fallback_sms,
                share_location_on_unanswered_request = excluded.share_location_on_unanswered_request, updated_at = now()
            """)
    }
}
