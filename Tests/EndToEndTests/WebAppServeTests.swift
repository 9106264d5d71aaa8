import Foundation
import RoostTestSupport
import Testing

/// `roost serve` answers the shipped web app at `/` (API.md is untouched): cacheable by ETag,
/// locked down by its Content-Security-Policy, with the app's entry paths and a JSON 404 beside it.
@Suite struct WebAppServeTests {
    @Test func theAppShellIsServedWithItsETagCachePolicyAndContentSecurityPolicy() async throws {
        let serve = try await ServeProcess()
        let client = try TestClient(port: serve.port)
        client.send("GET / HTTP/1.1\r\nHost: roost\r\n\r\n")
        let page = try #require(await client.readResponse())
        #expect(page.status == 200)
        #expect(page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["cache-control"] == "no-cache")
        #expect(page.headers["content-security-policy"]?.hasPrefix("default-src 'self'") == true)
        #expect(page.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        #expect(page.text.contains(#"<script type="module" src="/js/app.js"></script>"#))
        let etag = try #require(page.headers["etag"])

        // Revalidation costs a 304 with no body; another tag gets the page again.
        client.send("GET / HTTP/1.1\r\nHost: roost\r\nIf-None-Match: \(etag)\r\n\r\n")
        let unchanged = try #require(await client.readResponse())
        #expect(unchanged.status == 304 && unchanged.body.isEmpty && unchanged.headers["etag"] == etag)
        client.send("GET / HTTP/1.1\r\nHost: roost\r\nIf-None-Match: \"stale\"\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)

        // An invitation's link opens the app; its modules come as JavaScript, with no CSP of their own.
        client.send("GET /join?token=riv_x&tenant=oak HTTP/1.1\r\nHost: roost\r\n\r\n")
        let join = try #require(await client.readResponse())
        #expect(join.status == 200 && join.body == page.body)
        client.send("GET /js/app.js HTTP/1.1\r\nHost: roost\r\n\r\n")
        let script = try #require(await client.readResponse())
        #expect(script.status == 200 && script.headers["content-type"] == "text/javascript; charset=utf-8")
        #expect(script.headers["x-content-type-options"] == "nosniff")
        client.send("HEAD /sw.js HTTP/1.1\r\nHost: roost\r\n\r\n")
        let head = try #require(await client.readResponseHeadOnly())
        #expect(head.status == 200 && head.body.isEmpty)

        // A browser that takes gzip gets the compressed representation, tagged apart; Python's
        // decoder gives back exactly the plain body.
        client.send("GET /js/app.js HTTP/1.1\r\nHost: roost\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n")
        let compressed = try #require(await client.readResponse())
        #expect(compressed.headers["content-encoding"] == "gzip" && compressed.headers["vary"] == "Accept-Encoding")
        #expect(compressed.headers["etag"] != script.headers["etag"] && compressed.body.count * 2 < script.body.count)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roost-app-\(UUID().uuidString).js.gz")
        try Data(compressed.body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let python = ProcessInfo.processInfo.environment["ROOST_TEST_PYTHON"] ?? "/usr/bin/python3"
        let decoded = try await Subprocess.run(python, ["-c", "import gzip,sys; sys.stdout.write(gzip.decompress(open(sys.argv[1],'rb').read()).decode())", file.path])
        #expect(decoded.output == script.text)
        client.send("GET /js/app.js HTTP/1.1\r\nHost: roost\r\nAccept-Encoding: gzip;q=0, identity\r\n\r\n")
        #expect(await client.readResponse()?.headers["content-encoding"] == nil)
        client.send("GET /icon-192.png HTTP/1.1\r\nHost: roost\r\nAccept-Encoding: gzip\r\n\r\n")
        #expect(await client.readResponse().map { $0.status == 200 && $0.headers["content-encoding"] == nil } == true)

        // Everything else stays the API's: a JSON 404, and no directory walking.
        client.send("GET /nothing-here HTTP/1.1\r\nHost: roost\r\n\r\n")
        let missing = try #require(await client.readResponse())
        #expect(missing.status == 404 && missing.headers["content-type"] == "application/json; charset=utf-8")
        client.send("GET /js/../../Package.swift HTTP/1.1\r\nHost: roost\r\n\r\n")
        #expect(await client.readResponse().map { $0.status == 404 || $0.status == 400 } == true)
    }

    @Test func webDirOffServesTheAPIOnly() async throws {
        let serve = try await ServeProcess(["--web-dir", "off"])
        let client = try TestClient(port: serve.port)
        client.send("GET / HTTP/1.1\r\nHost: roost\r\n\r\n")
        #expect(await client.readResponse()?.status == 404)
    }
}
