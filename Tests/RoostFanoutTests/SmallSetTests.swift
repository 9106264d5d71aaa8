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
