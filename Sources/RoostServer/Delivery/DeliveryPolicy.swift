import Foundation

/// What becomes of a delivery after one attempt: a pure function of the outcome and the
/// attempt's number, tested alone (DeliveryPolicyTests); the worker carries it out.
struct DeliveryPolicy: Sendable, Equatable {
    /// Attempts before a row that keeps failing is marked `failed`.
    let maxAttempts: Int
    /// The wait before the next attempt.
    let backoff: Backoff

    enum Step: Equatable {
        case delivered
        /// Tried again after the backoff (the store marks it failed once it has had `maxAttempts`).
        case retry(String)
        /// Failed for good: no retry would change it.
        case failForGood(String)
        /// Sent at that time instead, no attempt counted (the origin asked to slow down).
        case postpone(Date)
    }

    struct Decision: Equatable {
        let step: Step
        /// The Web Push subscription is gone: its device is removed.
        let removeDevice: Bool
        /// A red alert's push that did not arrive: the member's email or SMS fallback is offered
        /// (the store queues it once the row has failed for good).
        let fallBack: Bool
        /// The attempt was the row's last (the failure metric counts it parked).
        let final: Bool
    }

    /// `attempt` counts from 1; `redAlertPush`: the row is a push of a red alert.
    func decide(_ outcome: DeliveryOutcome, attempt: Int, redAlertPush: Bool) -> Decision {
        if case .deferred(let until, _) = outcome {
            return Decision(step: .postpone(until), removeDevice: false, fallBack: false, final: false)
        }
        let fallBack = outcome != .delivered && redAlertPush
        switch outcome {
        case .delivered: return Decision(step: .delivered, removeDevice: false, fallBack: false, final: true)
        case .retry(let error): return Decision(step: .retry(error), removeDevice: false, fallBack: fallBack, final: attempt >= maxAttempts)
        case .failed(let error): return Decision(step: .failForGood(error), removeDevice: false, fallBack: fallBack, final: true)
        case .gone(let error): return Decision(step: .failForGood(error), removeDevice: true, fallBack: fallBack, final: true)
        case .deferred: preconditionFailure("decided above")
        }
    }
}
