import Foundation
import RoostPersistence

/// A member's quiet hours as instants: whether a moment falls inside them, and when they end.
/// `start` after `end` spans midnight (22:00–07:00); the local times follow the member's time
/// zone through daylight-saving changes. A bridge's armed hours are the same kind of daily
/// window (`BridgeArm`).
struct QuietHours {
    let startMinute: Int
    let endMinute: Int
    let calendar: Calendar

    /// Nil when the setting is not `HH:MM`–`HH:MM` in a known time zone with start ≠ end.
    init?(_ setting: NotificationPreferences.QuietHours) {
        self.init(start: setting.start, end: setting.end, timeZone: setting.timeZone)
    }

    init?(start: String, end: String, timeZone: String) {
        guard let start = Self.minute(start), let end = Self.minute(end), start != end, let zone = TimeZone(identifier: timeZone) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        (startMinute, endMinute, self.calendar) = (start, end, calendar)
    }

    static func minute(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard text.utf8.count == 5, parts.count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0..<24).contains(hour), (0..<60).contains(minute) else { return nil }
        return hour * 60 + minute
    }

    /// Whether `date` falls in the window, in its time zone.
    func contains(_ date: Date) -> Bool {
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        let minute = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        return startMinute < endMinute ? (startMinute..<endMinute).contains(minute) : (minute >= startMinute || minute < endMinute)
    }

    /// When the quiet hours that `now` falls in end; nil when `now` is not in them.
    func end(after now: Date) -> Date? {
        guard contains(now) else { return nil }
        return calendar.nextDate(after: now, matching: DateComponents(hour: endMinute / 60, minute: endMinute % 60, second: 0),
                                 matchingPolicy: .nextTime)
    }
}
