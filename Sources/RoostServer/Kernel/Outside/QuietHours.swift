import Foundation
import RoostPersistence

/// A member's quiet hours as instants: whether a moment falls inside them, and when they end.
/// `start` after `end` spans midnight (22:00–07:00); the local times follow the member's time
/// zone through daylight-saving changes.
struct QuietHours {
    let startMinute: Int
    let endMinute: Int
    let calendar: Calendar

    /// Nil when the setting is not `HH:MM`–`HH:MM` in a known time zone with start ≠ end.
    init?(_ setting: NotificationPreferences.QuietHours) {
        guard let start = Self.minute(setting.start), let end = Self.minute(setting.end), start != end,
              let zone = TimeZone(identifier: setting.timeZone) else { return nil }
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

    /// Whether `minute` of the day lies in the daily window from `start` until `end` (minutes
    /// of the day; `start` after `end` spans midnight).
    static func inside(_ minute: Int, from start: Int, until end: Int) -> Bool {
        start < end ? (start..<end).contains(minute) : (minute >= start || minute < end)
    }

    /// When the quiet hours that `now` falls in end; nil when `now` is not in them.
    func end(after now: Date) -> Date? {
        let parts = calendar.dateComponents([.hour, .minute], from: now)
        guard Self.inside((parts.hour ?? 0) * 60 + (parts.minute ?? 0), from: startMinute, until: endMinute) else { return nil }
        return calendar.nextDate(after: now, matching: DateComponents(hour: endMinute / 60, minute: endMinute % 60, second: 0),
                                 matchingPolicy: .nextTime)
    }
}
