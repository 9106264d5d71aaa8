import RoostProtocol

/// A set that keeps a single element inline and only more than one in a `Set`: a user usually
/// has one stream on a node, a session one, and a stream often follows one group, and a
/// one-element `Set` costs an allocation of about 100 bytes for each of them.
struct SmallSet<Element: Hashable>: Sequence, ExpressibleByArrayLiteral {
    private enum Storage {
        case none
        case one(Element)
        case many(Set<Element>)
    }

    private var storage = Storage.none

    init() {}

    init(arrayLiteral elements: Element...) {
        for element in elements { insert(element) }
    }

    var isEmpty: Bool {
        if case .none = storage { true } else { false }
    }

    var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let set): set.count
        }
    }

    func contains(_ element: Element) -> Bool {
        switch storage {
        case .none: false
        case .one(let only): only == element
        case .many(let set): set.contains(element)
        }
    }

    mutating func insert(_ element: Element) {
        switch storage {
        case .none:
            storage = .one(element)
        case .one(let only):
            if only != element { storage = .many([only, element]) }
        case .many(var set):
            storage = .none  // `set` is then the only reference, and grows in place
            set.insert(element)
            storage = .many(set)
        }
    }

    mutating func remove(_ element: Element) {
        switch storage {
        case .none:
            return
        case .one(let only):
            if only == element { storage = .none }
        case .many(var set):
            storage = .none
            set.remove(element)
            // Back inline at one: a set that shrank keeps no allocation for it.
            storage = set.count == 1 ? .one(set.first!) : .many(set)
        }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .none: Iterator(state: .one(nil))
        case .one(let only): Iterator(state: .one(only))
        case .many(let set): Iterator(state: .many(set.makeIterator()))
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate enum State {
            case one(Element?)
            case many(Set<Element>.Iterator)
        }

        fileprivate var state: State

        mutating func next() -> Element? {
            switch state {
            case .one(let element):
                state = .one(nil)
                return element
            case .many(var iterator):
                let element = iterator.next()
                state = .many(iterator)
                return element
            }
        }
    }
}

/// A dictionary that keeps a single entry inline and only more than one in a `Dictionary`: the
/// standing of a stream's groups (`StreamCursor`), where one group is common and a one-entry
/// `Dictionary` would cost an allocation of about 170 bytes.
struct SmallMap<Key: Hashable, Value> {
    private enum Storage {
        case none
        case one(Key, Value)
        case many([Key: Value])
    }

    private var storage = Storage.none

    init() {}

    /// The first of each key's entries wins, as `Dictionary(_:uniquingKeysWith: { first, _ in first })`.
    init(_ entries: some Sequence<(Key, Value)>) {
        for (key, value) in entries where self[key] == nil { self[key] = value }
    }

    var isEmpty: Bool {
        if case .none = storage { true } else { false }
    }

    subscript(key: Key) -> Value? {
        get {
            switch storage {
            case .none: nil
            case .one(let only, let value): only == key ? value : nil
            case .many(let entries): entries[key]
            }
        }
        set {
            switch storage {
            case .none:
                if let newValue { storage = .one(key, newValue) }
            case .one(let only, let value):
                if only == key {
                    storage = newValue.map { .one(key, $0) } ?? .none
                } else if let newValue {
                    storage = .many([only: value, key: newValue])
                }
            case .many(var entries):
                storage = .none  // `entries` is then the only reference, and changes in place
                entries[key] = newValue
                storage = entries.count == 1 ? .one(entries.first!.key, entries.first!.value) : .many(entries)
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        let value = self[key]
        if value != nil { self[key] = nil }
        return value
    }

    /// Changes `key`'s value in place (a value holding an array keeps it uniquely referenced);
    /// nil, without calling `body`, when there is none.
    mutating func update<Result>(_ key: Key, _ body: (inout Value) -> Result) -> Result? {
        switch storage {
        case .none:
            return nil
        case .one(let only, var value):
            guard only == key else { return nil }
            storage = .none
            defer { storage = .one(only, value) }
            return body(&value)
        case .many(var entries):
            guard entries[key] != nil else { return nil }
            storage = .none
            defer { storage = .many(entries) }
            return body(&entries[key]!)
        }
    }
}

/// Values by `SubscriberID`, kept in the slots of an array that grows by a quarter at a time (a
/// `Dictionary` doubles its table, and at 19,000 streams held 1.7 of its 200-byte entries a
/// stream). The table gives the IDs: an ID's low 24 bits name its slot and the bits above count
/// the inserts before it, so IDs sort in the order they were given, a closed stream's slot is
/// taken by the next without the old ID finding the new value, and a lookup is an index and a
/// comparison, no hashing.
///
/// The IDs are kept apart from the values, and a vacant slot's ID is 0, so a slot is found by
/// its ID alone; a value leaves only by `removeValue(forKey:)`. The fanout's state is generic
/// over its sink, and where RoostServer runs it unspecialised, every read of a whole value (a
/// slot read to compare its ID, a value compared with nil) copies it through the type's
/// witnesses: a stream's sink and cursor retained and released, once a delivery per stream.
struct SlotTable<Value> {
    private var ids: [SubscriberID] = []
    private var values: [Value?] = []
    private var vacant: [Int32] = []
    private var inserted = 0
    private(set) var count = 0

    /// 16 million slots: more streams than a process has descriptors.
    private static var slotBits: Int { 24 }

    init() {}

    /// Keeps `value` under a new ID.
    mutating func insert(_ value: Value) -> SubscriberID {
        inserted += 1
        count += 1
        let slot: Int
        if let reused = vacant.popLast() {
            slot = Int(reused)
        } else {
            precondition(ids.count < 1 << Self.slotBits, "more subscribers than a SlotTable holds")
            ids.reserveGrowingByAQuarter(toHold: ids.count + 1)
            values.reserveGrowingByAQuarter(toHold: values.count + 1)
            slot = ids.count
            ids.append(SubscriberID(0))
            values.append(nil)
        }
        let id = SubscriberID(inserted << Self.slotBits | slot)
        ids[slot] = id
        values[slot] = value
        return id
    }

    /// The slot `id` names while its value is there (a vacant slot's ID is 0, which no ID is).
    private func slot(of id: SubscriberID) -> Int? {
        let slot = id.value & (1 << Self.slotBits - 1)
        guard id.value > 0, slot < ids.count, ids[slot] == id else { return nil }
        return slot
    }

    /// Changed in place (`subscribers[id]!.cursor!.…`). A value goes in by `insert` and leaves
    /// by `removeValue(forKey:)`: setting nil here is a mistake, caught in debug builds.
    subscript(id: SubscriberID) -> Value? {
        _read {
            if let slot = slot(of: id) {
                yield values[slot]
            } else {
                yield nil
            }
        }
        _modify {
            if let slot = slot(of: id) {
                yield &values[slot]
                assert(values[slot] != nil, "a SlotTable's value leaves by removeValue(forKey:), not by nil")
            } else {
                var absent: Value?
                yield &absent
                precondition(absent == nil, "a SlotTable takes a new value by insert")
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: SubscriberID) -> Value? {
        guard let slot = slot(of: id) else { return nil }
        defer {
            values[slot] = nil
            ids[slot] = SubscriberID(0)
            vacate(slot)
        }
        return values[slot]
    }

    /// The IDs of the values that pass `isIncluded`, in the order they were given: a walk of
    /// every slot, for what no index serves.
    func ids(where isIncluded: (Value) -> Bool) -> [SubscriberID] {
        values.indices.compactMap { slot in values[slot].map(isIncluded) == true ? ids[slot] : nil }.sorted { $0.value < $1.value }
    }

    private mutating func vacate(_ slot: Int) {
        count -= 1
        vacant.append(Int32(slot))
    }
}
