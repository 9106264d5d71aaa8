extension Array {
    /// Makes room for `total` elements, growing by a quarter (at least 64) rather than doubling:
    /// for the tables a server holds one entry of for every connection (the loop's slots and
    /// ticks, the fanout's subscribers), where doubling leaves up to half the table unused and an
    /// idle connection pays for it.
    public mutating func reserveGrowingByAQuarter(toHold total: Int) {
        guard total > capacity else { return }
        reserveCapacity(Swift.max(total, count + Swift.max(64, count / 4)))
    }
}
