@testable import RoostServer
import Testing

/// What becomes of a delivery after one attempt, decided apart from the worker.
struct DeliveryPolicyTests {
    let policy = DeliveryPolicy(maxAttempts: 3, backoff: Backoff(base: 2, cap: 3600))

    @Test func aDeliveredRowIsDoneAndNothingFollows() {
        #expect(policy.decide(.delivered, attempt: 1, redAlertPush: true)
            == .init(step: .delivered, removeDevice: false, fallBack: false, final: true))
    }

    @Test func aPassingFailureIsRetriedUntilItsLastAttempt() {
        #expect(policy.decide(.retry("busy"), attempt: 1, redAlertPush: false)
            == .init(step: .retry("busy"), removeDevice: false, fallBack: false, final: false))
        #expect(policy.decide(.retry("busy"), attempt: 3, redAlertPush: false).final, "the third of three is the last")
    }

    @Test func aRefusalFailsAtOnceAndAGoneDeviceIsRemoved() {
        #expect(policy.decide(.failed("550 no such user"), attempt: 1, redAlertPush: false)
            == .init(step: .failForGood("550 no such user"), removeDevice: false, fallBack: false, final: true))
        #expect(policy.decide(.gone("410"), attempt: 1, redAlertPush: false)
            == .init(step: .failForGood("410"), removeDevice: true, fallBack: false, final: true))
    }

    @Test func aRedAlertsPushThatDidNotArriveOffersItsFallback() {
        for outcome in [DeliveryOutcome.retry("timeout"), .failed("refused"), .gone("410")] {
            #expect(policy.decide(outcome, attempt: 1, redAlertPush: true).fallBack, "\(outcome)")
            #expect(!policy.decide(outcome, attempt: 1, redAlertPush: false).fallBack, "\(outcome)")
        }
    }
}
