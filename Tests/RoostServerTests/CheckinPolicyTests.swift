import Foundation
import RoostProtocol
@testable import RoostServer
import Testing

/// The check-in state machine on an injected clock: every transition of its job and every
/// answer each status takes or refuses, without a database or a wait.
struct CheckinPolicyTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func clock(_ status: CheckinStatus, due: Double = 600, grace: Int = 900, prompted: Double? = nil, stall: Int? = nil,
               still: Double = 0, alerted: Double? = nil, ended: Double? = nil) -> CheckinPolicy.Clock {
        CheckinPolicy.Clock(status: status, dueAt: start + due, graceSeconds: grace, promptedAt: prompted.map { start + $0 },
                            stallAfterSeconds: stall, stillSince: start + still, alertedAt: alerted.map { start + $0 },
                            endedAt: ended.map { start + $0 })
    }

    func at(_ seconds: Double) -> Date { start + seconds }

    @Test func anActiveCheckinWaitsForItsDeadlineThenPromptsWithTheGraceFromThePrompt() {
        #expect(CheckinPolicy.step(clock(.active), now: at(0)) == .wait(until: at(600)))
        #expect(CheckinPolicy.step(clock(.active), now: at(599.9)) == .wait(until: at(600)))
        #expect(CheckinPolicy.step(clock(.active), now: at(600)) == .prompt(missAt: at(1500)))
        // A round that comes late (every node was down) still gives the walker the whole grace.
        #expect(CheckinPolicy.step(clock(.active), now: at(4000)) == .prompt(missAt: at(4900)))
    }

    @Test func noGraceMeansTheAlertAtTheDeadline() {
        #expect(CheckinPolicy.step(clock(.active, grace: 0), now: at(599)) == .wait(until: at(600)))
        #expect(CheckinPolicy.step(clock(.active, grace: 0), now: at(600)) == .miss)
    }

    @Test func aPromptUnansweredForTheGraceIsMissed() {
        let prompting = clock(.prompting, grace: 900, prompted: 600)
        #expect(CheckinPolicy.step(prompting, now: at(600)) == .wait(until: at(1500)))
        #expect(CheckinPolicy.step(prompting, now: at(1499)) == .wait(until: at(1500)))
        #expect(CheckinPolicy.step(prompting, now: at(1500)) == .miss)
    }

    @Test func standingStillPromptsBeforeTheDeadline() {
        // Stood still since 100 s; after 300 s of it the walker is asked, long before the deadline.
        let still = clock(.active, due: 3600, stall: 300, still: 100)
        #expect(CheckinPolicy.step(still, now: at(399)) == .wait(until: at(400)))
        #expect(CheckinPolicy.step(still, now: at(400)) == .prompt(missAt: at(1300)))
        // Moving again (a later `still_since`) pushes the prompt back; the deadline still wins when sooner.
        #expect(CheckinPolicy.step(clock(.active, due: 3600, stall: 300, still: 3500), now: at(3500)) == .wait(until: at(3600)))
    }

    @Test func anAlertNobodyCompletesLapsesADayLaterAndItsPlacesGoADayAfterTheEnd() {
        let day = CheckinPolicy.alertLifetime
        for status in [CheckinStatus.missed, .escalated] {
            #expect(CheckinPolicy.step(clock(status, alerted: 1500), now: at(1500)) == .wait(until: at(1500 + day)))
            #expect(CheckinPolicy.step(clock(status, alerted: 1500), now: at(1500 + day)) == .lapse)
        }
        for status in CheckinStatus.allCases {
            #expect(CheckinPolicy.step(clock(status, ended: 700), now: at(701)) == .wait(until: at(700 + CheckinPolicy.retention)))
            #expect(CheckinPolicy.step(clock(status, ended: 700), now: at(700 + CheckinPolicy.retention)) == .purge)
        }
    }

    @Test func everyAnswerInEveryStatus() {
        typealias Answer = CheckinPolicy.Answer
        func outcome(_ answer: Answer, _ status: CheckinStatus, ended: Bool = false) -> String {
            do {
                return "\(try CheckinPolicy.outcome(of: answer, status: status, ended: ended))"
            } catch {
                #expect(error.status == .conflict)
                return "409"
            }
        }
        let expected: [CheckinStatus: [Answer: String]] = [
            .active: [.complete: "complete(allClear: false)", .cancel: "cancel", .extend: "extend", .help: "help", .location: "location"],
            .prompting: [.complete: "complete(allClear: false)", .cancel: "cancel", .extend: "extend", .help: "help", .location: "location"],
            .missed: [.complete: "complete(allClear: true)", .cancel: "409", .extend: "409", .help: "409", .location: "location"],
            .escalated: [.complete: "complete(allClear: true)", .cancel: "409", .extend: "409", .help: "409", .location: "location"],
            .completed: [.complete: "409", .cancel: "409", .extend: "409", .help: "409", .location: "409"],
            .cancelled: [.complete: "409", .cancel: "409", .extend: "409", .help: "409", .location: "409"],
        ]
        for status in CheckinStatus.allCases {
            for answer in Answer.allCases {
                #expect(outcome(answer, status) == expected[status]?[answer], "\(answer) when \(status)")
                // A missed check-in that lapsed takes nothing more.
                #expect(outcome(answer, status, ended: true) == "409", "\(answer) when \(status) and ended")
            }
        }
    }

    @Test func stillnessArrivalAndTheTrailsSpacing() {
        let home = Location(lat: 55.6761, lon: 12.5683)
        let near = Location(lat: 55.6764, lon: 12.5683)  // ~33 m north
        let far = Location(lat: 55.6770, lon: 12.5683)  // ~100 m north
        #expect(abs(home.distance(to: far) - 100) < 1)
        #expect(CheckinPolicy.stillness(place: nil, since: at(0), point: home, now: at(10)) == (home, at(10)))
        #expect(CheckinPolicy.stillness(place: home, since: at(0), point: near, now: at(10)) == (home, at(0)))
        #expect(CheckinPolicy.stillness(place: home, since: at(0), point: far, now: at(10)) == (far, at(10)))

        let destination = Destination(lat: home.lat, lon: home.lon, radiusM: 50)
        #expect(CheckinPolicy.arrived(at: near, destination: destination))
        #expect(!CheckinPolicy.arrived(at: far, destination: destination))
        #expect(!CheckinPolicy.arrived(at: home, destination: nil))

        #expect(CheckinPolicy.keepsTrailPoint(lastAt: nil, points: 0, now: at(0)))
        #expect(!CheckinPolicy.keepsTrailPoint(lastAt: at(0), points: 1, now: at(14.9)))
        #expect(CheckinPolicy.keepsTrailPoint(lastAt: at(0), points: 1, now: at(15)))
        #expect(!CheckinPolicy.keepsTrailPoint(lastAt: at(0), points: CheckinPolicy.trailLimit, now: at(60)))
    }

    @Test func destinationsAreCheckedOnTheWayIn() throws {
        #expect(throws: APIError.self) { try Destination(lat: 55, lon: 12, radiusM: -5).validatedJSON() }
        #expect(throws: APIError.self) { try Destination(lat: 55, lon: 12, radiusM: 9).validatedJSON() }
        #expect(throws: APIError.self) { try Destination(lat: 91, lon: 12, radiusM: 100).validatedJSON() }
        #expect(throws: APIError.self) { try Destination(lat: 55, lon: 12, radiusM: .nan).validatedJSON() }
        #expect(try Destination(lat: 55, lon: 12, radiusM: 100).validatedJSON() == #"{"lat":55,"lon":12,"radius_m":100}"#)
    }
}
