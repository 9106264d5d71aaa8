import RoostProtocol
@testable import RoostServer
import Testing

/// The table of what a panel's events do (issue #59's event table), on events read from frames.
struct DC09EffectsTests {
    @Test func alarmsTriggerRestoresResolveTheSameKeyAndDuressTestsAndOpeningsAreWhatTheyAre() {
        func effect(_ code: String, _ qualifier: Character? = nil, zone: String? = "003") -> DC09Effects.Effect {
            DC09Effects.effect(of: DC09Event(code: code, qualifier: qualifier, zone: zone, area: "1"), account: "1234")
        }
        // SIA: burglary and its restore share a key; fire is red, tamper amber.
        #expect(effect("BA") == .trigger(dedupKey: "1234:003:BA", summary: "Burglary, zone 003 (area 1)", severity: .red))
        #expect(effect("BR") == .resolve(dedupKey: "1234:003:BA", summary: "Burglary, zone 003 (area 1) restored"))
        #expect(effect("FA") == .trigger(dedupKey: "1234:003:FA", summary: "Fire, zone 003 (area 1)", severity: .red))
        #expect(effect("TA") == .trigger(dedupKey: "1234:003:TA", summary: "Tamper, zone 003 (area 1)", severity: .amber))
        #expect(effect("DA") == .duress(dedupKey: "1234:003:DA", summary: "Duress, zone 003 (area 1)"))
        #expect(effect("OP") == .information(summary: "Opened (disarmed), zone 003 (area 1)"))
        #expect(effect("RP", zone: nil) == .heartbeat)
        #expect(effect("ZZ") == .unknown)
        // Contact ID: qualifier 1 new, 3 restore, 6 a status report.
        #expect(effect("130", "1") == .trigger(dedupKey: "1234:003:130", summary: "Burglary, zone 003 (area 1)", severity: .red))
        #expect(effect("130", "3") == .resolve(dedupKey: "1234:003:130", summary: "Burglary, zone 003 (area 1) restored"))
        #expect(effect("130", "6") == .information(summary: "Burglary, zone 003 (area 1): still so (status report)"))
        #expect(effect("121", "1") == .duress(dedupKey: "1234:003:121", summary: "Duress, zone 003 (area 1)"))
        // Nothing of a duress goes to the chat: its restore closes it, a status report repeats it.
        #expect(effect("121", "3") == .resolve(dedupKey: "1234:003:121", summary: "Duress, zone 003 (area 1) restored"))
        #expect(effect("121", "6") == .duress(dedupKey: "1234:003:121", summary: "Duress, zone 003 (area 1)"))
        #expect(effect("110", "1") == .trigger(dedupKey: "1234:003:110", summary: "Fire, zone 003 (area 1)", severity: .red))
        #expect(effect("383", "1") == .trigger(dedupKey: "1234:003:383", summary: "System trouble, zone 003 (area 1)", severity: .amber))
        #expect(effect("401", "3") == .information(summary: "Opened or closed, zone 003 (area 1)"))
        #expect(effect("602", "1") == .heartbeat)
        #expect(effect("999", "1") == .unknown)
    }
}
