import Foundation
import RoostPersistence
import RoostProtocol

/// A check-in's status (API.md "Check-ins"). `active` and `prompting` are the walk;
/// `missed` and `escalated` mean an alert went out and the check-in still takes locations and
/// a completion (the all clear) until it lapses a day later; `completed` and `cancelled` end it.
enum CheckinStatus: String, Sendable, CaseIterable {
    case active, prompting, missed, escalated, completed, cancelled

    /// Before any alert: the walk is on.
    var isWalking: Bool { self == .active || self == .prompting }
    /// An alert went out for it.
    var isAlerting: Bool { self == .missed || self == .escalated }

    /// A check-in's status (one this version does not know reads as ended).
    init(of checkin: Checkin) {
        self = CheckinStatus(rawValue: checkin.status) ?? .completed
    }
}

/// When a check-in's job does what, and which answers each status takes: pure functions of a
/// check-in's columns and the time, so every transition and every refusal is tested on an
/// injected clock without waiting.
enum CheckinPolicy {
    /// A check-in whose alert went out and nobody completed ends by itself this long after.
    static let alertLifetime: TimeInterval = 86_400
    /// Its locations (trail, newest point, battery) and its status page last this long after it ends.
    static let retention: TimeInterval = 86_400
    /// Moving less than this from where the walker stood counts as standing still.
    static let stillRadiusMeters = 50.0
    /// A trail keeps at most one point in this many seconds, and this many points in all.
    static let trailSpacing: TimeInterval = 15
    static let trailLimit = 1000
    static let defaultGraceSeconds = 900
    static let graceRange = 0...3600
    static let stallRange = 60...86_400

    /// What the clock says of a check-in, from its row.
    struct Clock: Sendable, Equatable {
        var status: CheckinStatus
        var dueAt: Date
        var graceSeconds: Int
        var promptedAt: Date?
        var stallAfterSeconds: Int?
        /// Since when the walker has stood within `stillRadiusMeters` of one place.
        var stillSince: Date
        var alertedAt: Date?
        var endedAt: Date?
    }

    /// What the check-in's job does now.
    enum Step: Sendable, Equatable {
        /// Nothing yet: look again then.
        case wait(until: Date)
        /// Ask the walker "are you OK?"; the alert follows at `missAt` without an answer.
        case prompt(missAt: Date)
        /// No answer in time (or no grace at all): raise the alert.
        case miss
        /// An alert nobody completed: the check-in ends (its status stays).
        case lapse
        /// Ended a day ago: delete its locations; the job is done.
        case purge
    }

    static func step(_ clock: Clock, now: Date) -> Step {
        if let ended = clock.endedAt {
            let purgeAt = ended.addingTimeInterval(retention)
            return now >= purgeAt ? .purge : .wait(until: purgeAt)
        }
        switch clock.status {
        case .active:
            let trigger = firstLook(clock)
            guard now >= trigger else { return .wait(until: trigger) }
            return clock.graceSeconds == 0 ? .miss : .prompt(missAt: now.addingTimeInterval(Double(clock.graceSeconds)))
        case .prompting:
            let missAt = (clock.promptedAt ?? now).addingTimeInterval(Double(clock.graceSeconds))
            return now >= missAt ? .miss : .wait(until: missAt)
        case .missed, .escalated:
            let lapseAt = (clock.alertedAt ?? now).addingTimeInterval(alertLifetime)
            return now >= lapseAt ? .lapse : .wait(until: lapseAt)
        case .completed, .cancelled:
            // Ended without an end time (not written by this version): purge on the next look.
            return .purge
        }
    }

    /// When a walk's job must look at it: the deadline, or sooner when standing still since
    /// `stillSince` would prompt first (moving later only makes that later: the job looks, finds
    /// nothing due, and waits).
    static func firstLook(_ clock: Clock) -> Date {
        guard let stall = clock.stallAfterSeconds else { return clock.dueAt }
        return min(clock.dueAt, clock.stillSince.addingTimeInterval(Double(stall)))
    }

    /// What the walker can ask of their check-in.
    enum Answer: String, Sendable, CaseIterable {
        case complete, cancel, extend, help, location
    }

    /// What an answer does in a status, or the 409 that refuses it.
    enum Outcome: Sendable, Equatable {
        /// Ends it as completed; `allClear` when an alert went out for it.
        case complete(allClear: Bool)
        case cancel
        /// A new deadline; a prompt is answered (back to `active`).
        case extend
        /// The red alert now.
        case help
        case location
    }

    static func outcome(of answer: Answer, status: CheckinStatus, ended: Bool) throws(APIError) -> Outcome {
        guard !ended, status != .completed, status != .cancelled else { throw conflict("the check-in has ended") }
        switch answer {
        case .complete: return .complete(allClear: status.isAlerting)
        case .location: return .location
        case .cancel:
            guard status.isWalking else { throw conflict("the alert has gone out: complete the check-in to send the all clear") }
            return .cancel
        case .extend:
            guard status.isWalking else { throw conflict("the alert has gone out: complete the check-in to send the all clear") }
            return .extend
        case .help:
            guard status.isWalking else { throw conflict("the alert has gone out already") }
            return .help
        }
    }

    private static func conflict(_ message: String) -> APIError {
        APIError(.conflict, code: .conflict, message: message)
    }

    /// Where the walker has stood still since, after a new point: the same place and time
    /// while the point is within `stillRadiusMeters` of it, else the new point, now.
    static func stillness(place: Location?, since: Date, point: Location, now: Date) -> (place: Location, since: Date) {
        if let place, place.distance(to: point) <= stillRadiusMeters { return (place, since) }
        return (point, now)
    }

    /// Whether a point is inside the destination's radius.
    static func arrived(at point: Location, destination: Destination?) -> Bool {
        guard let destination else { return false }
        return Location(lat: destination.lat, lon: destination.lon).distance(to: point) <= destination.radiusM
    }

    /// Whether a point joins the trail: the first, or `trailSpacing` after the last, while
    /// there is room.
    static func keepsTrailPoint(lastAt: Date?, points: Int, now: Date) -> Bool {
        guard points < trailLimit else { return false }
        guard let lastAt else { return true }
        return now.timeIntervalSince(lastAt) >= trailSpacing
    }
}

extension CheckinPolicy.Clock {
    /// A check-in's row as the policy reads it.
    init(_ checkin: Checkin) {
        self.init(status: CheckinStatus(of: checkin), dueAt: checkin.dueAt, graceSeconds: checkin.graceSeconds,
                  promptedAt: checkin.promptedAt, stallAfterSeconds: checkin.stallAfterSeconds, stillSince: checkin.stillSince,
                  alertedAt: checkin.alertedAt, endedAt: checkin.endedAt)
    }
}

