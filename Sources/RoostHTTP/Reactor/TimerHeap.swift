/// Deadlines of one event loop, earliest first (a binary min-heap of deadlines and tokens).
///
/// Cancelling is O(1) and lets go of the action at once, with whatever it holds (a closed
/// connection, say, whose idle deadline was a minute away); the heap entry stays and is skipped
/// when it comes due. Once cancelled entries outnumber the live ones the heap is rebuilt without
/// them, so a loop that schedules and cancels a deadline per request holds at most about twice
/// its live timers.
struct TimerHeap {
    struct Entry {
        let deadline: UInt64
        let token: UInt64
    }

    private var entries: [Entry] = []
    /// The live timers' actions, by token: a cancelled token has none.
    private var actions: [UInt64: () -> Void] = [:]
    private var nextToken: UInt64 = 1

    var isEmpty: Bool { actions.isEmpty }

    /// Entries held, live and cancelled (for tests of the bound).
    var storedEntries: Int { entries.count }

    mutating func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        let token = nextToken
        nextToken += 1
        actions[token] = action
        entries.append(Entry(deadline: deadline, token: token))
        siftUp(entries.count - 1)
        return token
    }

    mutating func cancel(_ token: UInt64) {
        guard actions.removeValue(forKey: token) != nil else { return }
        if actions.isEmpty {
            entries.removeAll(keepingCapacity: true)
        } else if entries.count > 2 * actions.count + 64 {
            // Amortised O(1): at least `actions.count + 64` cancellations come before the next.
            entries = entries.filter { actions[$0.token] != nil }
            for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }
    }

    /// The earliest live deadline, dropping cancelled entries on the way.
    mutating func nextDeadline() -> UInt64? {
        while let first = entries.first {
            if actions[first.token] != nil { return first.deadline }
            popFirst()
        }
        return nil
    }

    /// Removes and returns the actions due at `now`, in deadline order.
    mutating func takeDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let first = entries.first, first.deadline <= now {
            popFirst()
            if let action = actions.removeValue(forKey: first.token) { due.append(action) }
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
