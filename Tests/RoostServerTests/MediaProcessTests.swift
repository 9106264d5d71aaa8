import Foundation
import RoostTestSupport
import Testing

/// The strippers judged by readers that are not Roost's: Pillow draws photos, exiftool tags
/// them with GPS, camera, XMP and IPTC (scripts/lib/media_samples.py); they go up through the
/// API (whole and chunked), come back down, and exiftool must find none of it while Pillow
/// decodes the same pixels, and a JPEG keeps its orientation.
@Suite(.enabled(if: TestDatabase.isConfigured && SpecTool.python != nil, "needs TEST_DATABASE_URL and ROOST_TEST_PYTHON (scripts/test sets both)"))
struct MediaProcessTests {
    static func samples(_ arguments: String...) async throws -> Any {
        let script = SpecTool.root.appendingPathComponent("scripts/lib/media_samples.py").path
        let outcome = try await Subprocess.run(SpecTool.python!, [script] + arguments)
        guard outcome.status == 0 else { throw SubprocessError("media_samples.py \(arguments.first ?? "") failed: \(outcome.output)") }
        return try JSONSerialization.jsonObject(with: Data(outcome.output.utf8))
    }

    @Test func photosTaggedByExiftoolComeBackWithoutTheirMetadataAndWithTheSamePixels() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("roost-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = try #require(try await Self.samples("make", directory.path) as? [String: [String: Any]])
        #expect(made.keys.sorted() == ["jpeg", "large_jpeg", "png", "webp"])
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        for (name, sample) in made.sorted(by: { $0.key < $1.key }) {
            let path = try #require(sample["path"] as? String)
            let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            // The small photos whole and chunked; the large one (several stored chunks) chunked only,
            // to keep the suite's CPU down on two cores.
            for pieces in (name == "large_jpeg" ? [4093] : [nil, 4093]) as [Int?] {
                let (status, media) = try await MediaTests.upload(api, original, token: ann.token, contentType: sample["content_type"] as? String,
                                                                  pieces: pieces)
                #expect(status == 201, "\(name): \(media)")
                let id = try #require(media["id"] as? String)
                let stored = try await MediaTests.get(api, "/v1/media/\(id)", token: ann.token)
                #expect(stored.status == 200 && stored.body.count == media["bytes"] as? Int && stored.body.count < original.count, "\(name)")
                let file = directory.appendingPathComponent("stored-\(name)")
                try Data(stored.body).write(to: file)
                let problems = try #require(try await Self.samples("check", path, file.path) as? [String])
                #expect(problems == [], "\(name)\(pieces.map { " in pieces of \($0)" } ?? ""): \(problems)")
            }
        }
        await api.stop()
    }
}
