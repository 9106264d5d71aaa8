import CLinuxEvents
import RoostProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Something registered with an event loop for a file descriptor. Called on the loop thread.
package protocol EventHandler: AnyObject {
    /// `readable` and `writable` as epoll reported them; errors and hang-ups count as both,
    /// and the handler finds the error itself when it reads or writes.
    func handleEvent(readable: Bool, writable: Bool)
    /// A tick the handler asked for with `EventLoop.scheduleTick` (a WebSocket's keep-alive).
    func tick()
}

extension EventHandler {
    package func tick() {}
}

/// One epoll loop on its own thread, in the manner of redis's `ae`: flat per-fd slots with
/// generation numbers (an event for a closed and reused descriptor is recognised and dropped),
/// one eventfd for work handed over from other threads, and deadlines from a timer heap (and the
/// handlers' ticks) that decide how long `epoll_wait` may sleep. Nothing on this thread ever
/// waits for the database.
///
/// `@unchecked Sendable`: everything but `inbox` is touched only on the loop's own thread
/// (`execute` is the one door in from outside); `inbox` is a Mutex.
package final class EventLoop: @unchecked Sendable {
    /// 24 bytes, and so is an empty one (nil is one of the handler's spare bit patterns): the
    /// two 32-bit fields first, together.
    private struct Slot {
        var generation: UInt32
        var events: UInt32
        var handler: EventHandler
    }

    private struct Tick {
        let due: UInt64
        let fd: Int32
        let generation: UInt32
    }

    let index: Int
    /// Requests this loop has numbered (request IDs).
    var requestCounter: UInt64 = 0
    /// The loop's one read buffer, shared by its connections (see `ReadBuffer`).
    let readBuffer = ReadBuffer()
    private let epollFD: Int32
    private let wakeFD: Int32
    private var slots: [Slot?] = []
    private var nextGeneration: UInt32 = 1
    private var timers = TimerHeap()
    /// Handlers' ticks (`scheduleTick`), due first at `ticksHead`: a queue, not a heap, because
    /// every tick of a loop waits the same interval (its server's ping interval), so ticks come
    /// due in the order they were asked for. 16 bytes a tick, and no closure: an idle stream's
    /// keep-alive costs that much, where a timer cost about 180 bytes (its action, the closure's
    /// context and the heap's entry).
    private var ticks: [Tick] = []
    private var ticksHead = 0
    private let inbox = Mutex<(tasks: [@Sendable () -> Void], woken: Bool)>(([], false))
    /// Ordered work (`executeInOrder`): the steps not yet done, from `orderedHead` on.
    private var ordered: [OrderedStep?] = []
    private var orderedHead = 0
    /// A later turn is already asked to go on with `ordered`.
    private var orderedResumes = false
    private let orderedBudget: Int
    private var stopped = false
    let clock: any LoopClock
    /// Nanoseconds of the current iteration's start, read once per wake-up.
    private(set) var now: UInt64

    /// The marker in `epoll_data` for the wake-up eventfd (no fd has generation 0).
    private static let wakeMarker: UInt64 = UInt64(UInt32.max)

    /// A step of ordered work: spends from the turn's budget (a unit a connection written to)
    /// and says whether it is done; one that is not is called again on a later turn.
    package typealias OrderedStep = @Sendable (_ budget: inout Int) -> Bool

    /// `orderedBudget`: the units of ordered work a turn spends before the loop serves its
    /// sockets, timers and other hand-overs again.
    init(index: Int, clock: any LoopClock = SystemClock(), orderedBudget: Int = 256) throws {
        self.index = index
        self.clock = clock
        self.orderedBudget = max(1, orderedBudget)
        now = clock.now()
        epollFD = try mustSucceed("epoll_create1", { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        wakeFD = try mustSucceed("eventfd", { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) })
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeMarker
        try mustSucceed("epoll_ctl(eventfd)", { epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) })
        clock.attach { [weak self] in self?.execute {} }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// The system's monotonic time, for what waits in real time whatever the loops' clock (the
    /// shutdown grace).
    static func monotonicNow() -> UInt64 { SystemClock().now() }

    // MARK: - From any thread

    /// Runs `task` on the loop thread soon. The eventfd is written only when the inbox was
    /// empty, so a burst of hand-overs costs one wake-up.
    package func execute(_ task: @escaping @Sendable () -> Void) {
        let needsWake = inbox.withLock { inbox -> Bool in
            inbox.tasks.append(task)
            defer { inbox.woken = true }
            return !inbox.woken
        }
        if needsWake {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Runs `step` on the loop thread after every ordered step handed over before it, and
    /// again on later turns until it says it is done. Between those turns the loop serves its
    /// sockets, timers and `execute` hand-overs, so a write to thousands of connections (a
    /// fanout) does not hold up every other connection on the loop until it ends, while the
    /// writes handed over here keep their order (a frame never overtakes an earlier one).
    package func executeInOrder(_ step: @escaping OrderedStep) {
        execute { [self] in
            ordered.append(step)
            if !orderedResumes { runOrdered() }
        }
    }

    /// `work` as ordered work done in one call, spending `units` of its turn's budget.
    package func executeInOrder(spending units: Int, _ work: @escaping @Sendable () -> Void) {
        executeInOrder { budget in
            work()
            budget -= units
            return true
        }
    }

    /// Asks the loop to return from `run()` after the current iteration.
    func stop() {
        execute { [self] in stopped = true }
    }

    // MARK: - On the loop thread

    /// Registers `fd` for the given interests; returns the registration's generation.
    @discardableResult
    package func register(_ fd: Int32, _ handler: EventHandler, readable: Bool = true, writable: Bool = false) throws -> UInt32 {
        let generation = nextGeneration
        nextGeneration = nextGeneration &+ 1 == UInt32.max ? 1 : nextGeneration &+ 1
        let events = Self.mask(readable: readable, writable: writable)
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(UInt32(fd)) | UInt64(generation) << 32
        try mustSucceed("epoll_ctl(ADD)", { epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) })
        if Int(fd) >= slots.count {
            // A slot a descriptor, 24 bytes each: at 19,000 streams a doubled table held 1.7 a stream.
            slots.reserveGrowingByAQuarter(toHold: Int(fd) + 1)
            slots.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - slots.count))
        }
        slots[Int(fd)] = Slot(generation: generation, events: events, handler: handler)
        return generation
    }

    /// Changes what `fd` waits for; a no-op when nothing changes.
    func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        guard Int(fd) < slots.count, var slot = slots[Int(fd)] else { return }
        let events = Self.mask(readable: readable, writable: writable)
        guard events != slot.events else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(UInt32(fd)) | UInt64(slot.generation) << 32
        epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
        slot.events = events
        slots[Int(fd)] = slot
    }

    /// Forgets `fd`; the caller closes it afterwards.
    package func deregister(_ fd: Int32) {
        guard fd >= 0, Int(fd) < slots.count, slots[Int(fd)] != nil else { return }
        epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        slots[Int(fd)] = nil
    }

    /// Whether `fd` is registered to `handler` (a timer set for a descriptor checks this first:
    /// the descriptor may have closed and been reused since).
    func isRegistered(_ fd: Int32, to handler: EventHandler) -> Bool {
        guard fd >= 0, Int(fd) < slots.count, let slot = slots[Int(fd)] else { return false }
        return slot.handler === handler
    }

    /// The registered handlers of one kind (for shutdown: every connection of this loop).
    func handlers<Handler>(of type: Handler.Type) -> [Handler] {
        slots.compactMap { $0?.handler as? Handler }
    }

    /// Runs `action` on this loop `delay` nanoseconds from now; returns a token for `cancel`.
    func schedule(afterNanoseconds delay: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        timers.schedule(at: clock.now() + delay, action)
    }

    func cancelTimer(_ token: UInt64) {
        timers.cancel(token)
    }

    /// Calls `tick()` on the handler registered for `fd` as `generation` (`register`'s answer)
    /// `delay` nanoseconds from now, unless the descriptor was deregistered by then; there is
    /// nothing to cancel. Meant for one interval a loop: a tick asked for with a shorter delay
    /// than one before it comes due no earlier than that one.
    func scheduleTick(_ fd: Int32, generation: UInt32, afterNanoseconds delay: UInt64) {
        ticks.reserveGrowingByAQuarter(toHold: ticks.count + 1)  // a tick a stream
        ticks.append(Tick(due: clock.now() + delay, fd: fd, generation: generation))
    }

    /// The earliest deadline of a timer or a tick.
    private func nextDeadline() -> UInt64? {
        let tick = ticksHead < ticks.count ? ticks[ticksHead].due : nil
        guard let timer = timers.nextDeadline() else { return tick }
        return min(timer, tick ?? timer)
    }

    /// Ticks due at `current`, in order; those they ask for wait for a later turn.
    private func runTicks(at current: UInt64) {
        let end = ticks.count
        while ticksHead < end, ticks[ticksHead].due <= current {
            let tick = ticks[ticksHead]
            ticksHead += 1
            guard Int(tick.fd) < slots.count, let slot = slots[Int(tick.fd)], slot.generation == tick.generation else { continue }
            slot.handler.tick()
        }
        if ticksHead == ticks.count {
            ticks.removeAll(keepingCapacity: true)
            ticksHead = 0
        } else if ticksHead >= 1024 && ticksHead * 2 >= ticks.count {
            ticks.removeFirst(ticksHead)
            ticksHead = 0
        }
    }

    /// The loop itself: returns after `stop()`. `iteration` hears how long each wake-up's work
    /// took (the reactor lag every other connection on this loop waited through).
    func run(iteration: (UInt64) -> Void = { _ in }) {
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while !stopped {
            var timeout: Int32 = -1
            if let deadline = nextDeadline() {
                let current = clock.now()
                if deadline <= current {
                    timeout = 0
                } else if clock.passesByItself {
                    timeout = Int32(min((deadline - current + 999_999) / 1_000_000, 60_000))
                }
            }
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epollFD, $0.baseAddress, Int32($0.count), timeout) }
            now = clock.now()
            if count < 0 && errno != EINTR { preconditionFailure("epoll_wait failed: errno \(errno)") }
            for position in 0..<max(0, Int(count)) {
                let event = events[position]
                let data = event.data.u64
                if data == Self.wakeMarker {
                    drainInbox()
                    continue
                }
                let fd = Int32(truncatingIfNeeded: data & 0xFFFF_FFFF)
                let generation = UInt32(truncatingIfNeeded: data >> 32)
                // An earlier handler in this batch may have closed the fd (and it may be reused).
                guard Int(fd) < slots.count, let slot = slots[Int(fd)], slot.generation == generation else { continue }
                let failed = event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
                slot.handler.handleEvent(
                    readable: failed || event.events & EPOLLIN.rawValue != 0,
                    writable: failed || event.events & EPOLLOUT.rawValue != 0)
            }
            for action in timers.takeDue(now: clock.now()) { action() }
            runTicks(at: clock.now())
            iteration(clock.now() - now)
        }
    }

    private func drainInbox() {
        var counter: UInt64 = 0
        _ = read(wakeFD, &counter, 8)
        let tasks = inbox.withLock { inbox -> [@Sendable () -> Void] in
            inbox.woken = false
            let tasks = inbox.tasks
            inbox.tasks = []
            return tasks
        }
        for task in tasks { task() }
    }

    /// One turn's worth of ordered work; what is left goes on in a hand-over of its own, behind
    /// those already waiting.
    private func runOrdered() {
        var budget = orderedBudget
        while budget > 0, orderedHead < ordered.count {
            guard ordered[orderedHead]!(&budget) else { break }  // not done: the rest waits for the next turn
            ordered[orderedHead] = nil  // its frame and channel list go now, not when the queue empties
            orderedHead += 1
        }
        if orderedHead == ordered.count {
            ordered.removeAll(keepingCapacity: ordered.count <= 1024)
            orderedHead = 0
        } else {
            if orderedHead >= 1024 && orderedHead * 2 >= ordered.count {
                ordered.removeFirst(orderedHead)
                orderedHead = 0
            }
            orderedResumes = true
            execute { [self] in
                orderedResumes = false
                runOrdered()
            }
        }
    }

    private static func mask(readable: Bool, writable: Bool) -> UInt32 {
        (readable ? EPOLLIN.rawValue | EPOLLRDHUP.rawValue : 0) | (writable ? EPOLLOUT.rawValue : 0)
    }
}
