import Foundation

/// Where a newest-first page of a list continues: the time and id of the previous page's last
/// row, the rows after it being those with an earlier time, or the same time and a smaller id.
/// Times travel as whole microseconds since 1970, PostgreSQL's own precision, so a boundary is
/// exact: a `Date` read from a row holds its microseconds to well within half of one.
public struct NewestFirst: Sendable, Equatable {
    public let micros: Int64
    public let id: UUID

    public init(micros: Int64, id: UUID) {
        self.micros = micros
        self.id = id
    }

    public init(_ at: Date, _ id: UUID) {
        self.init(micros: Int64((at.timeIntervalSince1970 * 1_000_000).rounded()), id: id)
    }
}
