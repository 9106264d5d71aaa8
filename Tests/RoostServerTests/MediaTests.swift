import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
@testable import RoostServer
import RoostTestSupport
import Testing

/// Media over a real server and database: uploads stripped and stored, linked into messages,
/// downloaded by those allowed (bearer or signed URL) and nobody else, refused when broken,
/// over a limit or a quota, shared when identical, and gone with their message or unlinked.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct MediaTests {
    /// Uploads `bytes` as the raw body (chunked in `pieces` when given); the status and JSON.
    /// With `close`, the request says `Connection: close` (its body must still be read whole).
    static func upload(_ api: APIFixture, _ bytes: [UInt8], token: String, contentType: String? = nil, pieces: Int? = nil,
                       close: Bool = false, query: String = "") async throws -> (Int, [String: Any]) {
        let client = try TestClient(port: api.test.port)
        var head = "POST /v1/media\(query) HTTP/1.1\r\nAuthorization: Bearer \(token)\r\n" + (close ? "Connection: close\r\n" : "")
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if let pieces {
            client.send(head + "Transfer-Encoding: chunked\r\n\r\n")
            var index = 0
            while index < bytes.count {
                let piece = Array(bytes[index..<min(bytes.count, index + pieces)])
                client.send(Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8))
                index += piece.count
            }
            client.send("0\r\n\r\n")
        } else {
            client.send(Array((head + "Content-Length: \(bytes.count)\r\n\r\n").utf8) + bytes)
        }
        let response = try #require(await client.readResponse())
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:])
    }

    static func get(_ api: APIFixture, _ path: String, token: String? = nil, headers: [String: String] = [:]) async throws -> TestClient.Response {
        let client = try TestClient(port: api.test.port)
        var request = "GET \(path) HTTP/1.1\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        client.send(request + "\r\n")
        let response = await client.readResponse()
        return try #require(response, "GET \(path): no whole response; \(client.bytesRead) bytes read, then \(client.lastReadEnd ?? "?")")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    @Test func aThousandTricklingUploadsFromOneAccountLeaveEveryTenantServed() async throws {
        // The minimum rate is another test's (HTTPServerTests): on a busy machine opening a
        // thousand uploads can take longer than its window, which would free slots on its own.
        var network = NetworkLimits()
        network.minUploadBytesPerSecond = 0
        let api = try APIFixture(network: network)
        let mallory = try await api.person(email: "mallory@example.org")
        // Dee is in another tenant of the same server.
        let other = "birch-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try TenantStore().create(slug: other, name: "Birch Close", registration: .open, on: try TestDatabase.migratedConnection())
        let (registered, dee) = try await api.register(["tenant": other, "email": "dee@example.org", "display_name": "Dee"])
        let deeToken = try #require(dee["token"] as? String, "\(registered) \(dee)")
        let (_, group) = try await api.call("POST", "/v1/groups", ["name": "Birch Close"], token: deeToken)
        let gid = try #require(group["id"] as? String)

        // 1,030 uploads that would send a byte every 20 s: four take their slots, the rest are
        // refused at once, and none takes a handler slot from anyone.
        var running: [TestClient] = []
        var refusals: [Int: Int] = [:]
        for _ in 0..<1030 {
            let client = try TestClient(port: api.test.port)
            client.send("POST /v1/media HTTP/1.1\r\nAuthorization: Bearer \(mallory.token)\r\nContent-Type: image/png\r\n"
                        + "Content-Length: 1000000\r\nExpect: 100-continue\r\n\r\n")
            let head = try #require(await client.readResponseHeadOnly())
            if head.status == 100 {
                client.send([0x89])
                running.append(client)
            } else {
                refusals[head.status, default: 0] += 1
                #expect(head.headers["retry-after"] != nil)
            }
        }
        #expect(running.count == 4 && refusals == [429: 1026], "\(running.count) running, refused \(refusals)")
        // Another account from the same address waits too: the address has its four.
        let sam = try await api.person(email: "sam@example.org")
        #expect(try await Self.upload(api, MediaSamples.jpeg(), token: sam.token, contentType: "image/jpeg").0 == 429)
        let (posted, alert) = try await api.call("POST", "/v1/groups/\(gid)/messages",
                                                 ["client_msg_id": "fire-1", "text": "Smoke at no. 9", "kind": "alert", "severity": "red"], token: deeToken)
        #expect(posted == 201, "\(alert)")
        // When an upload ends (here refused: not a PNG after all), its slot is free before its answer.
        running[0].send([UInt8](repeating: 0, count: 16))
        let refused = await running[0].readResponse()
        #expect(refused.map { [400, 415].contains($0.status) } == true, "\(String(describing: refused?.status))")
        #expect(try await Self.upload(api, MediaSamples.jpeg(), token: sam.token, contentType: "image/jpeg").0 == 201)
        running.removeAll()
        await api.stop()
    }

    @Test func anUploadIsStrippedLinkedAndSeenOnlyByTheGroup() async throws {
        let api = try APIFixture()
        let (ann, ben, cy) = (try await api.person(email: "ann@example.org"), try await api.person(email: "ben@example.org"),
                              try await api.person(email: "cy@example.org"))
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm Street"], token: ann.token).1["id"] as? String)
        try await api.addMember(ben.id, to: group, role: "member")

        let (created, media) = try await Self.upload(api, MediaSamples.jpeg(), token: ann.token, contentType: "image/jpeg")
        #expect(created == 201, "\(media)")
        let id = try #require(media["id"] as? String)
        #expect(media["content_type"] as? String == "image/jpeg" && media["width"] as? Int == 3 && media["height"] as? Int == 2)
        #expect((media["sha256"] as? String)?.count == 64 && media["expires_at"] is String)

        // The uploader sees it; nobody else until it is linked.
        let own = try await Self.get(api, "/v1/media/\(id)", token: ann.token)
        #expect(own.status == 200 && own.body.count == media["bytes"] as? Int && !Self.contains(own.body, MediaSamples.secret))
        #expect(own.headers["content-type"] == "image/jpeg" && own.headers["x-content-type-options"] == "nosniff")
        #expect(own.headers["cache-control"]?.hasPrefix("private") == true && own.headers["content-disposition"] == "inline")
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ben.token).status == 404)

        // Someone else's upload cannot be attached; more than four cannot either.
        let (theft, refused) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                  ["client_msg_id": "x", "kind": "chat", "text": "mine now", "attachments": [id]], token: ben.token)
        #expect(theft == 400 && (refused["error"] as? [String: Any])?["field"] as? String == "attachments", "\(refused)")
        let five = (0..<5).map { _ in UUID().uuidString }
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "y", "kind": "chat", "text": "x", "attachments": five],
                                   token: ann.token).0 == 400)

        // Linked: the message carries it, with a signed URL; the group's members see it.
        let (posted, message) = try await api.call("POST", "/v1/groups/\(group)/messages",
                                                   ["client_msg_id": "car", "kind": "alert", "text": "This car again", "attachments": [id]], token: ann.token)
        #expect(posted == 201, "\(message)")
        let attachment = try #require((message["attachments"] as? [[String: Any]])?.first)
        #expect(attachment["id"] as? String == id && attachment["content_type"] as? String == "image/jpeg" && attachment["width"] as? Int == 3)
        let url = try #require(attachment["url"] as? String)
        let seq = try #require(message["seq"] as? Int)
        let (_, read) = try await api.call("GET", "/v1/groups/\(group)/messages/\(seq)", token: ben.token)
        #expect(((read["attachments"] as? [[String: Any]])?.first?["id"] as? String) == id)
        let seen = try await Self.get(api, "/v1/media/\(id)", token: ben.token)
        #expect(seen.status == 200 && seen.body == own.body)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: cy.token).status == 404)

        // Ranges, revalidation, the signed URL (and its forgeries).
        let part = try await Self.get(api, "/v1/media/\(id)", token: ben.token, headers: ["Range": "bytes=2-5"])
        #expect(part.status == 206 && part.body == Array(own.body[2...5]) && part.headers["content-range"] == "bytes 2-5/\(own.body.count)")
        let tail = try await Self.get(api, "/v1/media/\(id)", token: ben.token, headers: ["Range": "bytes=-3"])
        #expect(tail.status == 206 && tail.body == Array(own.body.suffix(3)))
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ben.token, headers: ["Range": "bytes=9999-"]).status == 416)
        for ignored in ["bytes=a-b", "bytes=0-1,3-4", "lines=1-2"] {
            let whole = try await Self.get(api, "/v1/media/\(id)", token: ben.token, headers: ["Range": ignored])
            #expect(whole.status == 200 && whole.body == own.body, "\(ignored)")
        }
        let etag = try #require(own.headers["etag"])
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ben.token, headers: ["If-None-Match": etag]).status == 304)
        let signed = try await Self.get(api, url)
        #expect(signed.status == 200 && signed.body == own.body)
        let forged = url.replacingOccurrences(of: "sig=", with: "sig=0")
        #expect(try await Self.get(api, forged).status == 404)
        let later = url.replacingOccurrences(of: "exp=", with: "exp=1")
        #expect(try await Self.get(api, later).status == 404)
        let expired = url.replacingOccurrences(of: #"exp=\d+"#, with: "exp=1000", options: .regularExpression)
        #expect(try await Self.get(api, expired).status == 404)

        // Another tenant's member, with the id: nothing.
        let other = "media-\(UUID().uuidString.prefix(8).lowercased())"
        _ = try await api.pool.withConnection { try TenantStore().create(slug: other, name: "Other", registration: .open, on: $0) }
        let (_, stranger) = try await api.call("POST", "/v1/auth/register", ["tenant": other, "email": "dee@example.org",
                                                                            "password": APIFixture.password, "display_name": "Dee"])
        #expect(try await Self.get(api, "/v1/media/\(id)", token: try #require(stranger["token"] as? String)).status == 404)

        // Redacting the message deletes the upload and its bytes.
        #expect(try await api.call("DELETE", "/v1/groups/\(group)/messages/\(seq)", token: ann.token).0 == 204)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ann.token).status == 404)
        let left = try await api.inTenant { _, connection in try connection.query("SELECT count(*) AS n FROM media_blobs").rows[0].decode(Int.self, "n") }
        #expect(left == 0)
        await api.stop()
    }

    @Test func aBridgeAttachesItsSnapshotAndSeesOnlyItsOwnGroupsMedia() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        let elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: ann.token).1["id"] as? String)
        let oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: ann.token).1["id"] as? String)
        let camera = try #require(try await api.call("POST", "/v1/groups/\(elm)/bridges", ["name": "Porch camera"], token: ann.token).1["key"] as? String)
        let stranger = try #require(try await api.call("POST", "/v1/groups/\(oak)/bridges", ["name": "Oak panel"], token: ann.token).1["key"] as? String)

        let (uploaded, snapshot) = try await Self.upload(api, MediaSamples.png(), token: camera)
        #expect(uploaded == 201, "\(snapshot)")
        let id = try #require(snapshot["id"] as? String)
        // Another bridge cannot attach it, nor see it.
        #expect(try await api.call("POST", "/v1/bridge/alerts", ["action": "trigger", "dedup_key": "x", "summary": "Motion", "attachments": [id]],
                                   token: stranger).0 == 400)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: stranger).status == 404)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ann.token).status == 404)  // not linked yet
        let (raised, alert) = try await api.call("POST", "/v1/bridge/alerts", ["action": "trigger", "dedup_key": "porch", "summary": "Motion at the porch",
                                                                              "severity": "amber", "attachments": [id]], token: camera)
        #expect(raised == 201 && ((alert["attachments"] as? [[String: Any]])?.first?["id"] as? String) == id, "\(alert)")
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ann.token).status == 200)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: camera).status == 200)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: stranger).status == 404)
        // A member's photo in Elm is the Elm camera's to see, never Oak's bridge's.
        let (_, photo) = try await Self.upload(api, MediaSamples.jpeg(), token: ann.token)
        let photoID = try #require(photo["id"] as? String)
        #expect(try await api.call("POST", "/v1/groups/\(elm)/messages", ["client_msg_id": "p", "kind": "chat", "text": "", "attachments": [photoID]],
                                   token: ann.token).0 == 201)
        #expect(try await Self.get(api, "/v1/media/\(photoID)", token: camera).status == 200)
        #expect(try await Self.get(api, "/v1/media/\(photoID)", token: stranger).status == 404)
        await api.stop()
    }

    @Test func aWalkersPhotoGoesWithTheHelpAlertAndRetentionTakesAPhotoWithItsMessage() async throws {
        let api = try APIFixture()
        let (ann, ben) = (try await api.person(email: "ann@example.org"), try await api.person(email: "ben@example.org"))
        let elm = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: ann.token).1["id"] as? String)
        try await api.addMember(ben.id, to: elm, role: "member")
        let checkin = try #require(try await api.call("POST", "/v1/checkins", ["group_id": elm, "due_in_s": 600], token: ann.token).1["id"] as? String)
        let (_, photo) = try await Self.upload(api, MediaSamples.jpeg(), token: ann.token)
        let id = try #require(photo["id"] as? String)
        let (helped, alert) = try await api.call("POST", "/v1/checkins/\(checkin)/help", ["note": "Followed by a car", "attachments": [id]], token: ann.token)
        #expect(helped == 201 && ((alert["attachments"] as? [[String: Any]])?.first?["id"] as? String) == id, "\(alert)")
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ben.token).status == 200)

        // A photo in a chat message that retention purges goes with it.
        let oak = try #require(try await api.call("POST", "/v1/groups", ["name": "Oak"], token: ann.token).1["id"] as? String)
        let (_, old) = try await Self.upload(api, MediaSamples.png(), token: ann.token)
        let oldID = try #require(old["id"] as? String)
        #expect(try await api.call("POST", "/v1/groups/\(oak)/messages", ["client_msg_id": "o", "kind": "chat", "text": "Bins", "attachments": [oldID]],
                                   token: ann.token).0 == 201)
        let oakID = try #require(UUID(uuidString: oak))
        try await api.inTenant { _, connection in
            try connection.query("UPDATE group_events SET created_at = now() - interval '3 days' WHERE group_id = \(oakID)")
            try connection.query("UPDATE groups SET retention_days = 2 WHERE id = \(oakID)")
            try connection.query("INSERT INTO retention_jobs (group_id, tenant_id) SELECT id, tenant_id FROM groups WHERE id = \(oakID)")
        }
        let purges = RetentionJobs(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        let tenant = try await api.inTenant { tenant, _ in tenant }
        // The upload's deletion may land while a GET streams it (the head sent, then its chunk
        // gone, so the connection closes): that answer, cut short, counts as not served.
        func stillServed() async throws -> Bool {
            let client = try TestClient(port: api.test.port)
            client.send("GET /v1/media/\(oldID) HTTP/1.1\r\nAuthorization: Bearer \(ann.token)\r\n\r\n")
            return await client.readResponse()?.status == 200
        }
        try await Poll.until {
            guard try await stillServed() else { return true }
            try await purges.runOnce(tenant: tenant)
            return false
        }
        #expect(try await Self.get(api, "/v1/media/\(oldID)", token: ann.token).status == 404)
        let left = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM media_blobs WHERE content_type = 'image/png'").rows[0].decode(Int.self, "n")
        }
        #expect(left == 0)
        #expect(try await Self.get(api, "/v1/media/\(id)", token: ben.token).status == 200)
        await api.stop()
    }

    @Test func brokenMislabelledAndUnknownFilesAreRefusedAndNothingIsStored() async throws {
        var limits = AbuseLimits.generous
        limits.maxUploadBytes = 4096
        let api = try APIFixture(limits: limits)
        let ann = try await api.person(email: "ann@example.org")
        let jpeg = MediaSamples.jpeg()
        #expect(try await Self.upload(api, jpeg, token: ann.token, contentType: "image/png").0 == 415)
        #expect(try await Self.upload(api, Array("GIF89a, a dancing cat".utf8), token: ann.token).0 == 415)
        let heic: [UInt8] = [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
        let (refused, why) = try await Self.upload(api, heic, token: ann.token)
        #expect(refused == 415 && ((why["error"] as? [String: Any])?["message"] as? String)?.contains("JPEG") == true)
        #expect(try await Self.upload(api, Array(jpeg.prefix(60)), token: ann.token).0 == 400)
        #expect(try await Self.upload(api, MediaSamples.png(idatCRCBroken: true), token: ann.token).0 == 400)
        #expect(try await Self.upload(api, [UInt8](repeating: 0xFF, count: 5000), token: ann.token).0 == 413)
        #expect(try await Self.upload(api, jpeg, token: "rst_not-a-token").0 == 401)
        // A client that waits for 100 Continue gets it before sending the body.
        let waiting = try TestClient(port: api.test.port)
        let pdf = MediaSamples.pdf
        waiting.send("POST /v1/media HTTP/1.1\r\nAuthorization: Bearer \(ann.token)\r\nExpect: 100-continue\r\nContent-Length: \(pdf.count)\r\n\r\n")
        let interim = try #require(await waiting.readResponseHeadOnly())
        #expect(interim.status == 100)
        waiting.send(pdf)
        #expect(await waiting.readResponse()?.status == 201)
        // Chunked, in pieces of 7 bytes: the same as whole; and a connection's last request's body is read whole.
        let (chunked, media) = try await Self.upload(api, MediaSamples.webp(), token: ann.token, pieces: 7, close: true)
        #expect(chunked == 201 && media["content_type"] as? String == "image/webp" && media["width"] as? Int == 320, "\(media)")
        let stored = try await api.inTenant { _, connection in
            try connection.query("SELECT count(*) AS n FROM media_blobs").rows[0].decode(Int.self, "n")
        }
        #expect(stored == 2)  // the PDF and the WebP; nothing of the refused ones
        await api.stop()
    }

    @Test func identicalBytesAreStoredOnceAndTheTenantsQuotaHolds() async throws {
        var limits = AbuseLimits.generous
        limits.tenantMediaQuotaBytes = 600
        let api = try APIFixture(limits: limits)
        let ann = try await api.person(email: "ann@example.org")
        let (first, one) = try await Self.upload(api, MediaSamples.png(), token: ann.token)
        let (second, two) = try await Self.upload(api, MediaSamples.png(), token: ann.token)
        #expect(first == 201 && second == 201 && one["id"] as? String != two["id"] as? String && one["sha256"] as? String == two["sha256"] as? String)
        let (blobs, used) = try await api.inTenant { _, connection in
            let row = try connection.query("SELECT (SELECT count(*) FROM media_blobs) AS blobs, (SELECT bytes FROM media_usage) AS used").rows[0]
            return (try row.decode(Int.self, "blobs"), try row.decode(Int.self, "used"))
        }
        #expect(blobs == 1 && used == one["bytes"] as? Int)
        // The quota: what does not fit is refused with quota_exceeded.
        let big = MediaSamples.pngSignature + MediaSamples.chunk("IHDR", [0, 0, 0, 5, 0, 0, 0, 4, 8, 2, 0, 0, 0])
            + MediaSamples.chunk("IDAT", [UInt8](repeating: 7, count: 700)) + MediaSamples.chunk("IEND", [])
        let (full, error) = try await Self.upload(api, big, token: ann.token)
        #expect(full == 413 && (error["error"] as? [String: Any])?["code"] as? String == "quota_exceeded", "\(error)")
        let kept = try await api.inTenant { _, connection in try connection.query("SELECT count(*) AS n FROM media_blobs").rows[0].decode(Int.self, "n") }
        #expect(kept == 1, "what did not fit left bytes behind")
        await api.stop()
    }

    /// A PNG of about `bytes` bytes, different for each `seed` (identical uploads share their bytes).
    static func png(bytes: Int, seed: UInt8) -> [UInt8] {
        MediaSamples.pngSignature + MediaSamples.chunk("IHDR", [0, 0, 0, 5, 0, 0, 0, 4, 8, 2, 0, 0, 0])
            + MediaSamples.chunk("IDAT", [seed] + [UInt8](repeating: 7, count: bytes - 58)) + MediaSamples.chunk("IEND", [])
    }

    @Test func eachUploaderKeepsToTheirShareAndAlertsHaveTheLastOfTheQuota() async throws {
        var limits = AbuseLimits.generous
        limits.tenantMediaQuotaBytes = 10_000
        limits.mediaSharePercent = 30          // 3,000 bytes each
        limits.mediaAlertReservePercent = 20   // ordinary uploads stop at 8,000
        let api = try APIFixture(limits: limits)
        let (ann, bob, cy) = (try await api.person(email: "ann@example.org"), try await api.person(email: "bob@example.org"),
                              try await api.person(email: "cy@example.org"))
        var seed: UInt8 = 0
        func upload(_ person: APIFixture.Person, query: String = "") async throws -> (Int, [String: Any]) {
            seed += 1
            return try await Self.upload(api, Self.png(bytes: 1400, seed: seed), token: person.token, query: query)
        }
        // Ann's share: two fit, the third is hers to wait for, whatever room the tenant has.
        for _ in 0..<2 { #expect(try await upload(ann).0 == 201) }
        let (over, refusal) = try await upload(ann)
        #expect(over == 413 && refusal.errorCode == "quota_exceeded" && "\(refusal)".contains("share"), "\(refusal)")
        // Bob and Cy fill the tenant up to the reserve (5,600 + 1,400 + 1,400 would pass 8,000).
        for person in [bob, bob, cy] { #expect(try await upload(person).0 == 201) }
        let (full, error) = try await upload(cy)
        #expect(full == 413 && error.errorCode == "quota_exceeded" && !"\(error)".contains("share"), "\(error)")
        // The reserve takes a photo for an alert, and it goes only into an alert.
        let (reserved, photo) = try await upload(cy, query: "?for=alert")
        #expect(reserved == 201, "\(photo)")
        let id = try #require(photo["id"] as? String)
        let group = try #require(try await api.call("POST", "/v1/groups", ["name": "Elm"], token: cy.token).1["id"] as? String)
        let (chat, chatError) = try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "c1", "text": "look", "kind": "chat",
                                                                                             "attachments": [id]], token: cy.token)
        #expect(chat == 400 && (chatError["error"] as? [String: Any])?["field"] as? String == "attachments")
        #expect(try await api.call("POST", "/v1/groups/\(group)/messages", ["client_msg_id": "a1", "text": "Broken window", "kind": "alert",
                                                                            "severity": "red", "attachments": [id]], token: cy.token).0 == 201)
        #expect(try await Self.upload(api, Self.png(bytes: 1400, seed: 99), token: cy.token, query: "?for=chat").0 == 400)
        await api.stop()
    }

    @Test func pendingUploadsAreLimitedAndUnlinkedOnesExpireWithTheirBytes() async throws {
        let api = try APIFixture()
        let ann = try await api.person(email: "ann@example.org")
        // 20 uploads may wait to be linked; the 21st waits for one of them to go.
        for index in 0..<MediaRoutes.maxPending {
            let (status, _) = try await Self.upload(api, MediaSamples.jpeg(orientation: UInt8(index % 8 + 1)) + [UInt8(index)], token: ann.token)
            #expect(status == 201)
        }
        #expect(try await Self.upload(api, MediaSamples.pdf, token: ann.token).0 == 429)

        // A day on, the unlinked uploads expire and take their bytes with them.
        try await api.inTenant { tenant, connection in
            try connection.query("UPDATE media SET expires_at = now() - interval '1 second'")
            try connection.query("UPDATE media_expiries SET due_at = now() WHERE tenant_id = \(tenant)")
        }
        let tenant = try await api.inTenant { tenant, _ in tenant }
        let expiries = MediaExpiries(pool: api.pool, runner: JobRunner(metrics: JobMetrics(), log: Log(level: .error)))
        try await Poll.until {
            guard try await api.inTenant({ _, connection in try connection.query("SELECT 1 FROM media").first != nil }) else { return true }
            try await expiries.runOnce(tenant: tenant)  // another suite's node may take some first
            return false
        }
        let after = try await api.inTenant { _, connection in
            let row = try connection.query("SELECT (SELECT count(*) FROM media) + (SELECT count(*) FROM media_blobs) AS n, (SELECT bytes FROM media_usage) AS used").rows[0]
            return (try row.decode(Int.self, "n"), try row.decode(Int.self, "used"))
        }
        #expect(after.0 == 0 && after.1 == 0)
        #expect(try await Self.upload(api, MediaSamples.pdf, token: ann.token).0 == 201)
        await api.stop()
    }
}
