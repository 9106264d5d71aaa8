import Foundation
import RoostProtocol

/// One schema migration: a file `sql/NNNN_name.sql`, applied once, in version order.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String
    /// SHA-256 of the file's bytes, recorded when applied, so a later edit is caught.
    public let checksum: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = Digest.hex(Digest.sha256(Array(sql.utf8)))
    }

    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name + ".sql"
    }

    /// Reads every `NNNN_name.sql` in `directory`, sorted by version; anything else there that
    /// ends in `.sql` is refused so that a typo cannot silently skip a migration.
    public static func load(from directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw DatabaseError(.migration, "cannot read the migrations folder \(directory.path): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for fileName in names.sorted() where fileName.hasSuffix(".sql") {
            guard let (version, name) = parse(fileName: fileName) else {
                throw DatabaseError(
                    .migration, "migration file \(fileName) is not named NNNN_name.sql (digits, an underscore, [a-z0-9_])")
            }
            let url = directory.appendingPathComponent(fileName)
            guard let data = FileManager.default.contents(atPath: url.path),
                  let sql = String(data: data, encoding: .utf8) else {
                throw DatabaseError(.migration, "cannot read migration file \(url.path) as UTF-8")
            }
            if let clash = migrations.first(where: { $0.version == version }) {
                throw DatabaseError(.migration, "migrations \(clash.fileName) and \(fileName) share version \(version)")
            }
            migrations.append(Migration(version: version, name: name, sql: sql))
        }
        return migrations.sorted { $0.version < $1.version }
    }

    static func parse(fileName: String) -> (Int, String)? {
        let stem = fileName.dropLast(4)
        guard let underscore = stem.firstIndex(of: "_") else { return nil }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard digits.count >= 4, digits.allSatisfy(\.isASCII), let version = Int(digits), version > 0,
              !name.isEmpty,
              name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        else { return nil }
        return (version, String(name))
    }
}
