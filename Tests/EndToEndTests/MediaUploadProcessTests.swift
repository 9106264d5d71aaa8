import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Four 4 MiB files uploaded at once to a real `roost serve`: each streams through its
/// stripper into PostgreSQL while the server's peak resident memory grows by far less than the
/// 16 MiB that pass, so no upload is ever held whole. (The twenty concurrent 25 MiB
/// uploads are `scripts/bench-stream media`'s burst, in a release build: too heavy to run beside
/// the rest of the suite.)
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct MediaUploadProcessTests {
    /// A PDF of `size` bytes (the cheapest format to pass through a debug build's stripper: this
    /// test is about the transport and the storage holding nothing whole).
    static func pdf(size: Int, variant: UInt8) -> [UInt8] {
        let head = Array("%PDF-1.4\n% \(variant)\n".utf8)
        let tail = Array("\n%%EOF\n".utf8)
        var bytes = head
        bytes.reserveCapacity(size)
        var value: UInt32 = 2_463_534_242 &+ UInt32(variant)
        while bytes.count < size - tail.count {
            value ^= value << 13
            value ^= value >> 17
            value ^= value << 5
            bytes.append(UInt8(truncatingIfNeeded: value))
        }
        return bytes + tail
    }

    @Test func concurrentUploadsStreamInMemoryFarBelowTheirSize() async throws {
        try await TestDatabase.withScratchDatabaseAsync { database in
            let url = TestDatabase.configuration(database: database).connectionString
            let connection = try TestDatabase.connect(database: database)
            try Migrator(migrations: Migration.load(from: TestDatabase.migrationsDirectory)).run(on: connection)
            _ = try TenantStore().create(slug: "photo-street", name: "Photo Street", registration: .open, on: connection)
            let node = try await ServeProcess(["--db-pool-size", "10"], databaseURL: url)
            let api = try APIClient(port: node.port)
            let (_, account) = try await api.call("POST", "/v1/auth/register", ["tenant": "photo-street", "email": "ann@example.org",
                                                                              "password": "a long enough password", "display_name": "Ann"])
            let token = try #require(account["token"] as? String)
            // The test's own heavy writes must not bring autovacuum to the scratch database it drops after.
            try connection.query("ALTER TABLE media_chunks SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)")
            let (count, size) = (4, 4 << 20)
            let files = (0..<count).map { Self.pdf(size: size, variant: UInt8($0)) }
            _ = try await api.call("GET", "/v1/me", token: token)  // warm
            let before = try ExportProcessTests.memory(of: node.process.pid)
            let port = node.port
            let started = ContinuousClock.now
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for file in files {
                    group.addTask {
                        await offload { () -> Int in
                            guard let client = try? TestClient(port: port, receiveTimeoutSeconds: 300) else { return 0 }
                            client.send(Array("POST /v1/media HTTP/1.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/pdf\r\nContent-Length: \(file.count)\r\n\r\n".utf8) + file)
                            return client.readResponseBlocking()?.status ?? 0
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let elapsed = ContinuousClock.now - started
            let after = try ExportProcessTests.memory(of: node.process.pid)
            #expect(statuses == Array(repeating: 201, count: count), "\(statuses)")
            let stored = try connection.withTenantTransaction(try TenantStore().find(slug: "photo-street", on: connection)!.id) {
                try $0.query("SELECT count(*) AS n, sum(bytes) AS bytes FROM media_blobs WHERE sha256 IS NOT NULL").rows[0]
            }
            #expect(try stored.decode(Int.self, "n") == count)
            let growth = (after.peak - before.peak) / 1024
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("media: \(count) concurrent uploads of \(size >> 20) MiB in \(elapsed) (\(Int(Double(count * size) / 1_048_576 / seconds)) MiB/s); "
                  + "server peak RSS \(before.peak / 1024) → \(after.peak / 1024) MiB (+\(growth) MiB), RSS now \(after.now / 1024) MiB")
            #expect(growth < 8, "the server's peak memory grew by \(growth) MiB for \(count) uploads of \(size >> 20) MiB")
            node.process.signal(SIGTERM)
            #expect(await node.process.wait() == 0)
        }
    }
}
