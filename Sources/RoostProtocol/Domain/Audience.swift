import Foundation

/// Who sees a group's row (a message, its alert, the events about it) besides everyone in the
/// group: `hidden_from` names the one user it is hidden from (a walker's duress alert), or holds
/// `managersOnly`, an id that is no user's, meaning only the group's owner and admins see it (an
/// alarm panel's duress code; sql/0037_managers_only.sql).
public enum Audience {
    public static let managersOnly = UUID(uuidString: "00000000-0000-4000-8000-00000000ad01")!
}
