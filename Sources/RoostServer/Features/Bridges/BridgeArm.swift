import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// A bridge's arm state (API.md "Bridges, extended"): `armed`, `disarmed` (its alerts are
/// recorded as information and page nobody), or `schedule`: armed each day from `from` until
/// `until` (HH:MM, spanning midnight when `from` is later) in `time_zone`, through
/// daylight-saving changes, and disarmed the rest of the day.
struct BridgeArm: Sendable, Equatable {
    struct Schedule: Codable, Sendable, Equatable, KnownFields {
        static let fieldNames: Set<String> = ["from", "until", "time_zone"]
        let from: String
        let until: String
        let timeZone: String

        enum CodingKeys: String, CodingKey {
            case from, until
            case timeZone = "time_zone"
        }
    }

    let state: String
    let schedule: Schedule?

    /// Validates a request's `arm` and `schedule` (400 naming the field).
    init(_ state: String, schedule: Schedule?) throws(APIError) {
        switch state {
        case "armed", "disarmed":
            guard schedule == nil else { throw APIError.invalid("a schedule goes with arm: schedule only", "schedule") }
        case "schedule":
            guard let schedule else { throw APIError.invalid("arm: schedule needs a schedule {from, until, time_zone}", "schedule") }
            guard let from = QuietHours.minute(schedule.from), let until = QuietHours.minute(schedule.until), from != until else {
                throw APIError.invalid("schedule.from and schedule.until must be two different times HH:MM", "schedule")
            }
            guard TimeZone(identifier: schedule.timeZone) != nil else {
                throw APIError.invalid("time_zone must be an IANA time zone such as Europe/Copenhagen", "schedule.time_zone")
            }
        default:
            throw APIError.invalid("arm must be armed, disarmed or schedule", "arm")
        }
        (self.state, self.schedule) = (state, schedule)
    }

    /// The stored state (a schedule the database holds was checked when it was set).
    init(_ bridge: Bridge) {
        state = bridge.arm
        schedule = bridge.armSchedule.flatMap { try? JSONDecoder().decode(Schedule.self, from: Data($0.utf8)) }
    }

    /// For the store: the state and the schedule as JSON text.
    var stored: (state: String, schedule: String?) {
        (state, schedule.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) })
    }

    /// Whether the bridge pages the street at `now`.
    func isArmed(at now: Date) -> Bool {
        switch state {
        case "armed": return true
        case "schedule":
            // A stored schedule was checked when it was set; one that cannot be read arms.
            guard let schedule, let window = QuietHours(start: schedule.from, end: schedule.until, timeZone: schedule.timeZone) else { return true }
            return window.contains(now)
        default: return false
        }
    }
}
