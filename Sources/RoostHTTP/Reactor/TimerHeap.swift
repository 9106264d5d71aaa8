/// Deadlines of one event loop, earliest first (a binary min-heap). Cancelled timers stay in
/// the heap and are skipped when they come due, so cancelling is O(1).
struct TimerHeap {
    struct Entry {
        let deadline: UInt64
        let token: UInt64
        let action: () -> Void
    }

    private var entries: [Entry] = []
    private var live: Set<UInt64> = []
    private var nextToken: UInt64 = 1

    var isEmpty: Bool { live.isEmpty }

    mutating func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        let token = nextToken
        nextToken += 1
        live.insert(token)
        entries.append(Entry(deadline: deadline, token: token, action: action))
        siftUp(entries.count - 1)
        return token
    }

    mutating func cancel(_ token: UInt64) {
        live.remove(token)
        if live.isEmpty { entries.removeAll(keepingCapacity: true) }
    }

    /// The earliest live deadline, dropping cancelled entries on the way.
    mutating func nextDeadline() -> UInt64? {
        while let first = entries.first {
            if live.contains(first.token) { return first.deadline }
            popFirst()
        }
        return nil
    }

    /// Removes and returns the actions due at `now`, in deadline order.
    mutating func takeDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let first = entries.first, first.deadline <= now {
            popFirst()
            if live.remove(first.token) != nil { due.append(first.action) }
        }
        return due
    }

    private mutating func popFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
