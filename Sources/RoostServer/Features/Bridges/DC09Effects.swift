import RoostProtocol

/// What an alarm panel's event does in Roost (issue #59; one table for SIA DC-03 codes and
/// Ademco Contact ID, the receiver applies it): a new alarm triggers, its restore resolves
/// the same alert (`dedup_key` `account:zone:code`, the restore keyed by the alarm it restores);
/// burglary, fire, panic and medical are red, trouble and tamper amber; duress is a silent red
/// alert for the group's managers only; open/close is information; tests and link checks are
/// heartbeats. Codes not in the table are unknown (the receiver answers DUH).
enum DC09Effects {
    enum Effect: Equatable {
        case trigger(dedupKey: String, summary: String, severity: AlertSeverity)
        case resolve(dedupKey: String, summary: String)
        /// The panel's duress code: a red alert only the group's owner and admins see.
        case duress(dedupKey: String, summary: String)
        case information(summary: String)
        case heartbeat
        case unknown
    }

    enum Kind { case alarm(AlertSeverity), duress, information, heartbeat }

    /// SIA DC-03 event codes: the alarm code, its restore code, what it is called, and its kind.
    static let sia: [(alarm: String, restore: String?, name: String, kind: Kind)] = [
        ("BA", "BR", "Burglary", .alarm(.red)), ("FA", "FR", "Fire", .alarm(.red)), ("PA", "PR", "Panic", .alarm(.red)),
        ("HA", "HR", "Hold-up", .alarm(.red)), ("MA", "MR", "Medical emergency", .alarm(.red)), ("GA", "GR", "Gas", .alarm(.red)),
        ("KA", "KR", "Heat", .alarm(.red)), ("WA", "WR", "Water leak", .alarm(.amber)), ("TA", "TR", "Tamper", .alarm(.amber)),
        ("AT", "AR", "Mains power lost", .alarm(.amber)), ("YT", "YR", "Battery trouble", .alarm(.amber)),
        ("YC", "YK", "Communication trouble", .alarm(.amber)), ("DA", nil, "Duress", .duress),
        ("OP", nil, "Opened (disarmed)", .information), ("CL", nil, "Closed (armed)", .information),
        ("RP", nil, "Automatic test", .heartbeat), ("RX", nil, "Manual test", .heartbeat),
    ]

    /// Contact ID event codes by range: the first match wins.
    static let contactID: [(codes: ClosedRange<Int>, name: String, kind: Kind)] = [
        (121...121, "Duress", .duress), (100...109, "Medical emergency", .alarm(.red)), (110...118, "Fire", .alarm(.red)),
        (120...129, "Panic", .alarm(.red)), (130...139, "Burglary", .alarm(.red)), (140...149, "Alarm", .alarm(.red)),
        (150...169, "Environmental alarm", .alarm(.amber)), (300...399, "System trouble", .alarm(.amber)),
        (400...499, "Opened or closed", .information), (601...602, "Test report", .heartbeat),
    ]

    /// `holdUpIsDuress`: the bridge reads SIA's hold-up code `HA` (and its restore) as duress.
    static func effect(of event: DC09Event, account: String, holdUpIsDuress: Bool = false) -> Effect {
        let zone = event.zone.map { $0.isEmpty ? "" : ", zone \($0)" } ?? ""
        let area = event.area.map { " (area \($0))" } ?? ""
        if let qualifier = event.qualifier {
            guard let code = Int(event.code), let entry = contactID.first(where: { $0.codes.contains(code) }) else { return .unknown }
            let key = "\(account):\(event.zone ?? "0"):\(event.code)"
            return effect(entry.kind, name: entry.name + zone + area, key: key, restore: qualifier == "3", status: qualifier == "6")
        }
        if holdUpIsDuress, event.code == "HA" || event.code == "HR" {
            return effect(.duress, name: "Duress" + zone + area, key: "\(account):\(event.zone ?? "0"):DA", restore: event.code == "HR", status: false)
        }
        if let entry = sia.first(where: { $0.alarm == event.code }) {
            return effect(entry.kind, name: entry.name + zone + area, key: "\(account):\(event.zone ?? "0"):\(entry.alarm)", restore: false, status: false)
        }
        if let entry = sia.first(where: { $0.restore == event.code }) {
            return effect(entry.kind, name: entry.name + zone + area, key: "\(account):\(event.zone ?? "0"):\(entry.alarm)", restore: true, status: false)
        }
        return .unknown
    }

    private static func effect(_ kind: Kind, name: String, key: String, restore: Bool, status: Bool) -> Effect {
        switch kind {
        case .heartbeat: return .heartbeat
        case .information: return .information(summary: name)
        // Nothing of a duress reaches the group's chat: its restore closes the managers' alert,
        // a status report repeats it.
        case .duress: return restore ? .resolve(dedupKey: key, summary: name + " restored") : .duress(dedupKey: key, summary: name)
        case _ where status: return .information(summary: name + ": still so (status report)")
        case .alarm(let severity): return restore ? .resolve(dedupKey: key, summary: name + " restored") : .trigger(dedupKey: key, summary: name, severity: severity)
        }
    }
}
