import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One raw HTTP/1.1 exchange (`head` with its blank line, then `body`) on a fresh connection:
/// the answer's status and body.
func rawExchange(port: UInt16, _ head: String, body: [UInt8] = []) throws -> (Int, [UInt8]) {
    let fd = try connectLoopback(port: port)
    defer { Glibc.close(fd) }
    guard sendAll(fd, Array(head.utf8) + body) else { throw BenchError("send failed") }
    var reader = HTTPResponseReader()
    return try reader.receive(from: fd)
}

/// A JPEG of about `size` bytes (its scan is not a real picture, but every byte of it passes
/// through the stripper as a photo's would), with an Exif segment to strip.
func benchJPEG(size: Int, variant: Int) -> [UInt8] {
    func segment(_ code: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, code, UInt8((data.count + 2) >> 8), UInt8((data.count + 2) & 0xFF)] + data
    }
    var bytes: [UInt8] = [0xFF, 0xD8] + segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
        + segment(0xE1, Array("Exif\0\0MM\0*\0\0\0\u{8}\0\0\0\0\0\0".utf8) + [UInt8](repeating: 0x41, count: 2000))
        + segment(0xDB, [0] + [UInt8](repeating: 1, count: 64)) + segment(0xC0, [8, 0x0B, 0xB8, 0x0F, 0xA0, 1, 1, 0x11, 0])
        + segment(0xDA, [1, 1, 0, 0, 63, 0])
    bytes.reserveCapacity(size)
    var value = UInt32(truncatingIfNeeded: 2_463_534_242 &+ variant)
    while bytes.count < size - 2 {
        value ^= value << 13
        value ^= value >> 17
        value ^= value << 5
        let byte = UInt8(truncatingIfNeeded: value)
        bytes.append(byte)
        if byte == 0xFF { bytes.append(0x00) }  // stuffed, as an encoder writes it
    }
    return bytes + [0xFF, 0xD9]
}

/// Twenty 25 MiB uploads at once, the server's peak memory sampled; then uploads
/// (`--concurrency` at a time, each linked into a message so none stays pending) for
/// `--seconds`, then downloads of one 1 MiB photo by the group's member as fast as
/// `--concurrency` clients go: throughput in MiB/s, download latency percentiles.
func mediaScenario(_ options: Options) throws {
    print("media: photo uploads (stripped, stored in PostgreSQL) and downloads of a 1 MiB photo")
    let seed = try Seed.make(databaseURL: options.databaseURL, port: options.port, groups: 1, membersPerGroup: 1)
    let group = seed.groups[0].uuidString.lowercased()
    let size = 4 << 20
    let files = (0..<8).map { benchJPEG(size: size, variant: $0) }
    @Sendable func upload(_ file: [UInt8], token: String) throws -> String {
        let (status, body) = try rawExchange(port: options.port, "POST /v1/media HTTP/1.1\r\nAuthorization: Bearer \(token)\r\n"
                                                + "Content-Type: image/jpeg\r\nContent-Length: \(file.count)\r\nConnection: close\r\n\r\n", body: file)
        guard status == 201, let id = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["id"] as? String else {
            throw BenchError("upload answered \(status): \(String(decoding: body, as: UTF8.self))")
        }
        return id
    }
    @Sendable func link(_ id: String, _ poster: HTTPPoster, index: Int) throws {
        let body = #"{"client_msg_id":"m\#(index)-\#(UUID().uuidString.prefix(8))","kind":"chat","text":"","attachments":["\#(id)"]}"#
        let (status, _) = try poster.request("POST", "/v1/groups/\(group)/messages", body: body, token: seed.posterToken)
        guard status == 201 else { throw BenchError("linking answered \(status)") }
    }

    // The burst: memory must not follow the bytes in flight.
    let burst = (0..<20).map { benchJPEG(size: 25 << 20, variant: 100 + $0) }
    let memory = PeakRSS(pid: options.serverPID)
    let burstFailures = Atomic<Int>(0)
    let burstBegan = now()
    paced(count: burst.count, rate: nil, threads: burst.count, make: { try? HTTPPoster(port: options.port) }) { poster, ticket in
        do { try link(try upload(burst[ticket], token: seed.posterToken), poster, index: 1_000_000 + ticket) } catch { burstFailures.add(1, ordering: .relaxed) }
    }
    let burstElapsed = Double(now() - burstBegan) / 1e9
    let peak = memory.stop()
    print(String(format: "  burst: 20 uploads of 25 MiB at once in %.1f s (%.1f MiB/s); server RSS %d MiB before, peak %d MiB (+%d MiB)%@  (goal: under +64 MiB)",
                 burstElapsed, 500 / burstElapsed, memory.baseline / 1024, peak / 1024, (peak - memory.baseline) / 1024,
                 burstFailures.load(ordering: .relaxed) > 0 ? " (\(burstFailures.load(ordering: .relaxed)) failed)" : ""))

    let uploaded = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    let began = now()
    paced(rate: nil, threads: options.concurrency, until: began + UInt64(options.seconds * 1e9), make: { try? HTTPPoster(port: options.port) }) { poster, ticket in
        do {
            try link(try upload(files[ticket % files.count], token: seed.posterToken), poster, index: ticket)
            uploaded.add(1, ordering: .relaxed)
        } catch {
            failures.add(1, ordering: .relaxed)
        }
    }
    let elapsed = Double(now() - began) / 1e9
    let megabytes = Double(uploaded.load(ordering: .relaxed) * size) / 1_048_576
    print(String(format: "  uploads: %d of %d MiB by %d clients in %.1f s: %.1f MiB/s%@", uploaded.load(ordering: .relaxed), size >> 20,
                 options.concurrency, elapsed, megabytes / elapsed, failures.load(ordering: .relaxed) > 0 ? " (\(failures.load(ordering: .relaxed)) failed)" : ""))

    let photo = try upload(benchJPEG(size: 1 << 20, variant: 99), token: seed.posterToken)
    try link(photo, try HTTPPoster(port: options.port), index: -1)
    let member = seed.members[0][0]
    let latencies = Mutex<[UInt64]>([])
    let bad = Atomic<Int>(0)
    let downloadsBegan = now()
    paced(rate: nil, threads: options.concurrency, until: downloadsBegan + UInt64(options.seconds * 1e9), make: { () as Void? }) { _, _ in
        let start = now()
        let ok = (try? rawExchange(port: options.port, "GET /v1/media/\(photo) HTTP/1.1\r\nAuthorization: Bearer \(member)\r\nConnection: close\r\n\r\n"))
            .map { $0.0 == 200 && $0.1.count > 1_000_000 } ?? false
        if !ok { bad.add(1, ordering: .relaxed) }
        let took = now() - start
        latencies.withLock { $0.append(took) }
    }
    let downloadElapsed = Double(now() - downloadsBegan) / 1e9
    let samples = latencies.withLock { $0 }.sorted()
    print(String(format: "  downloads of a 1 MiB photo by %d clients: %.0f/s (%.1f MiB/s), p50 %@, p99 %@%@", options.concurrency,
                 Double(samples.count) / downloadElapsed, Double(samples.count) / downloadElapsed, milliseconds(percentile(samples, 0.5)),
                 milliseconds(percentile(samples, 0.99)), bad.load(ordering: .relaxed) > 0 ? " (\(bad.load(ordering: .relaxed)) failed)" : ""))
    Report.record(["scenario": "media", "server": "roost", "concurrency": options.concurrency, "upload_mib_s": (megabytes / elapsed * 10).rounded() / 10,
                   "burst_rss_growth_mib": (peak - memory.baseline) / 1024,
                   "downloads_per_s": Int(Double(samples.count) / downloadElapsed), "download_p50_ms": ms(percentile(samples, 0.5)),
                   "download_p99_ms": ms(percentile(samples, 0.99))])
}
