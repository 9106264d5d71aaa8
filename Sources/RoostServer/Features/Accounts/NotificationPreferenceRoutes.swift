import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol

/// API.md "Outbound delivery": `GET/PUT /v1/me/notifications`, what a member wants pushed
/// (`push: {chat, amber, red, responses}`), when to be left alone (`quiet_hours`: `{start, end,
/// time_zone}` or null; red alerts and check-in prompts come through), whether a red alert
/// reaches them by email or SMS when no device of theirs works (`fallback: {email, sms}`), and
/// whether an unanswered check-in request shares their newest place. A PUT changes the fields
/// it names and keeps the rest.
struct NotificationPreferenceRoutes: Sendable {
    let auth: Authentication

    struct Body: Decodable, KnownFields {
        static let fieldNames: Set<String> = names(CodingKeys.self)
        let push: Push?
        let quietHours: SettingChange<QuietHoursBody?>
        let fallback: Fallback?
        let shareLocation: Bool?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case push, fallback
            case quietHours = "quiet_hours"
            case shareLocation = "share_location_on_unanswered_request"
        }

        struct Push: Decodable, Equatable, Sendable {
            let chat: Bool?
            let amber: Bool?
            let red: Bool?
            let responses: Bool?
        }

        struct QuietHoursBody: Decodable, Equatable, Sendable {
            let start: String
            let end: String
            let timeZone: String
            enum CodingKeys: String, CodingKey {
                case start, end
                case timeZone = "time_zone"
            }
        }

        struct Fallback: Decodable, Equatable, Sendable {
            let email: Bool?
            let sms: Bool?
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            push = try container.decodeIfPresent(Push.self, forKey: .push)
            quietHours = try container.decodeSetting(QuietHoursBody.self, forKey: .quietHours)
            fallback = try container.decodeIfPresent(Fallback.self, forKey: .fallback)
            shareLocation = try container.decodeIfPresent(Bool.self, forKey: .shareLocation)
        }

        /// `current` with this body's changes; 400 for quiet hours that are not two different
        /// `HH:MM` times in a known time zone.
        func applied(to current: NotificationPreferences) throws(APIError) -> NotificationPreferences {
            var preferences = current
            if let push {
                preferences.pushChat = push.chat ?? preferences.pushChat
                preferences.pushAmber = push.amber ?? preferences.pushAmber
                preferences.pushRed = push.red ?? preferences.pushRed
                preferences.pushResponses = push.responses ?? preferences.pushResponses
            }
            if case .set(let quiet) = quietHours {
                preferences.quietHours = try quiet.map { quiet throws(APIError) in
                    guard QuietHours.minute(quiet.start) != nil, QuietHours.minute(quiet.end) != nil else {
                        throw APIError.invalid("start and end are times of day, HH:MM", "quiet_hours")
                    }
                    guard quiet.start != quiet.end else { throw APIError.invalid("start and end must differ", "quiet_hours") }
                    guard TimeZone(identifier: quiet.timeZone) != nil else {
                        throw APIError.invalid("time_zone must be an IANA time zone such as Europe/Copenhagen", "quiet_hours.time_zone")
                    }
                    return NotificationPreferences.QuietHours(start: quiet.start, end: quiet.end, timeZone: quiet.timeZone)
                }
            }
            if let fallback {
                preferences.fallbackEmail = fallback.email ?? preferences.fallbackEmail
                preferences.fallbackSMS = fallback.sms ?? preferences.fallbackSMS
            }
            preferences.shareLocationOnUnansweredRequest = shareLocation ?? preferences.shareLocationOnUnansweredRequest
            return preferences
        }
    }

    static func json(_ preferences: NotificationPreferences) -> HTTPResponse {
        let quiet = preferences.quietHours.map {
            "{\"start\":\(JSONString.quote($0.start)),\"end\":\(JSONString.quote($0.end)),\"time_zone\":\(JSONString.quote($0.timeZone))}"
        } ?? "null"
        let text = "{\"push\":{\"chat\":\(preferences.pushChat),\"amber\":\(preferences.pushAmber),\"red\":\(preferences.pushRed),"
            + "\"responses\":\(preferences.pushResponses)},\"quiet_hours\":\(quiet),"
            + "\"fallback\":{\"email\":\(preferences.fallbackEmail),\"sms\":\(preferences.fallbackSMS)},"
            + "\"share_location_on_unanswered_request\":\(preferences.shareLocationOnUnansweredRequest)}"
        return .json(.ok, Array(text.utf8))
    }

    func add(to builder: inout Router.Builder) {
        builder.add(.get, "/v1/me/notifications", signedIn: auth) { _, caller in
            Self.json(try await caller.inTenant { user, connection in try PreferenceStore().load(user.id, on: connection) })
        }
        builder.add(.put, "/v1/me/notifications", bodyLimit: 4 * 1024, signedIn: auth) { context, caller in
            let body = try context.decodeJSON(Body.self)
            return Self.json(try await caller.inTenant { user, connection in
                let preferences = try body.applied(to: try PreferenceStore().load(user.id, on: connection))
                try PreferenceStore().save(preferences, tenant: user.tenantID, user: user.id, on: connection)
                return preferences
            })
        }
    }
}
