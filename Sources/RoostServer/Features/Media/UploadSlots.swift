import Synchronization

/// Uploads running at once per uploader on this node (docs/SECURITY.md, "Upload slots"): each
/// upload holds one slot under each of its keys (its account or bridge, and its client address),
/// taken together or not at all, so one account, one bridge or one address cannot take the
/// node's upload slots from everyone else.
final class UploadSlots: Sendable {
    private let held = Mutex<[String: Int]>([:])
    let perKey: Int

    init(perKey: Int) {
        self.perKey = perKey
    }

    /// Takes a slot under every key, or none when any key has `perKey` already.
    func take(_ keys: [String]) -> Bool {
        held.withLock { held in
            guard keys.allSatisfy({ held[$0, default: 0] < perKey }) else { return false }
            for key in keys { held[key, default: 0] += 1 }
            return true
        }
    }

    func release(_ keys: [String]) {
        held.withLock { held in
            for key in keys {
                let left = held[key, default: 1] - 1
                held[key] = left > 0 ? left : nil
            }
        }
    }
}
