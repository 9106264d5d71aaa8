import Testing
@testable import RoostFanout

/// `SmallSet` behaves as a `Set` through its changes of storage: none, one inline, many.
struct SmallSetTests {
    @Test func itAnswersAsASetWouldThroughEveryChangeOfStorage() {
        var small: SmallSet<Int> = []
        var reference = Set<Int>()
        // Up to three, down to none, with repeats and removals of what is not there.
        let steps: [(insert: Bool, element: Int)] = [(true, 1), (true, 1), (false, 2), (true, 2), (true, 3), (false, 1),
                                                     (false, 1), (false, 3), (true, 4), (false, 2), (false, 4), (false, 4)]
        for (index, step) in steps.enumerated() {
            if step.insert {
                small.insert(step.element)
                reference.insert(step.element)
            } else {
                small.remove(step.element)
                reference.remove(step.element)
            }
            #expect(Set(small) == reference, "after step \(index)")
            #expect(small.count == reference.count && small.isEmpty == reference.isEmpty, "after step \(index)")
            for element in 0...5 { #expect(small.contains(element) == reference.contains(element), "\(element) after step \(index)") }
        }
        #expect(Array(SmallSet<Int>()).isEmpty)
        #expect(Array([7] as SmallSet<Int>) == [7])
    }
}

/// `SmallMap` behaves as a `Dictionary` through its changes of storage.
struct SmallMapTests {
    @Test func itAnswersAsADictionaryWouldThroughEveryChangeOfStorage() {
        var small = SmallMap<Int, [Int]>()
        var reference: [Int: [Int]] = [:]
        // Sets, replacements, in-place updates (of a key that is there and one that is not) and
        // removals, through none, one and many entries.
        let steps: [(key: Int, value: [Int]?, append: Int?)] = [
            (1, [1], nil), (1, nil, 5), (2, nil, 6), (2, [2], nil), (3, [3], nil), (2, nil, 7), (1, nil, nil),
            (3, nil, nil), (2, nil, 8), (4, nil, nil), (2, nil, nil), (2, nil, 9),
        ]
        for (index, step) in steps.enumerated() {
            if let append = step.append {
                let changed = small.update(step.key) { value -> Int in
                    value.append(append)
                    return value.count
                }
                reference[step.key]?.append(append)
                #expect(changed == reference[step.key]?.count, "step \(index)")
            } else {
                small[step.key] = step.value
                reference[step.key] = step.value
            }
            for key in 0...5 { #expect(small[key] == reference[key], "key \(key) after step \(index)") }
            #expect(small.isEmpty == reference.isEmpty, "after step \(index)")
        }
        #expect(SmallMap([(1, [1]), (2, [2]), (1, [3])])[1] == [1], "the first of a key's entries wins")
        var removing = SmallMap([(1, [1]), (2, [2])])
        #expect(removing.removeValue(forKey: 2) == [2] && removing.removeValue(forKey: 2) == nil && removing[1] == [1])
    }
}

/// `SlotTable` behaves as a `Dictionary` keyed by the IDs it gives, slots reused or not.
struct SlotTableTests {
    @Test func itAnswersAsADictionaryWouldWhileItsSlotsAreReused() {
        var table = SlotTable<[Int]>()
        var reference: [SubscriberID: [Int]] = [:]
        var given: [SubscriberID] = []
        // Inserts, in-place changes and removals in a pattern that vacates slots and fills them
        // again, past the first growth (64 slots).
        for round in 0..<300 {
            let id = table.insert([round])
            given.append(id)
            reference[id] = [round]
            if round % 3 == 0, given.count > 2 {
                let victim = given[given.count - 3]
                #expect(table.removeValue(forKey: victim) == reference.removeValue(forKey: victim), "round \(round)")
            }
            if round % 5 == 0, given.count > 1 {
                let victim = given[given.count - 2]
                #expect(table.removeValue(forKey: victim) == reference.removeValue(forKey: victim), "round \(round)")
            }
            let changed = given[max(0, given.count - 5)]
            table[changed]?.append(round)
            reference[changed]?.append(round)
        }
        #expect(table.count == reference.count)
        // Every ID given, kept or removed (a removed one must not find its slot's new value).
        for id in given { #expect(table[id] == reference[id], "\(id)") }
        #expect(table[SubscriberID(0)] == nil && table[SubscriberID(-1)] == nil && table[SubscriberID(Int.max)] == nil)
        #expect(given == given.sorted { $0.value < $1.value }, "IDs sort in the order they were given")
        #expect(Set(given).count == given.count)
    }
}

/// `SessionKey` holds a token hash's bytes and gives back the hex the database and notices use.
struct SessionKeyTests {
    @Test func itRoundTripsTheHexOfAHashAndRefusesAnythingElse() {
        let bytes = (0..<32).map { UInt8($0 * 7 + 3) }
        let key = SessionKey(bytes: bytes)!
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        #expect(key.hex == hex)
        #expect(SessionKey(hex: hex) == key && SessionKey(hex: hex.uppercased()) == key)
        #expect(SessionKey(bytes: bytes.reversed()) != key)
        for bad in ["", String(hex.dropLast()), hex + "0", String(hex.dropLast()) + "g", "aa1"] { #expect(SessionKey(hex: bad) == nil, "\(bad)") }
        #expect(SessionKey(bytes: Array(bytes.dropLast())) == nil)
    }
}
