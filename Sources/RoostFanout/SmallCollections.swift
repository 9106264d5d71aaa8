/// A set that keeps a single element inline and only more than one in a `Set`: a user usually
/// has one stream on a node, a session one, and a stream often follows one group, and an empty
/// or one-element `Set` would cost an allocation of about 100 bytes for each of them.
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
