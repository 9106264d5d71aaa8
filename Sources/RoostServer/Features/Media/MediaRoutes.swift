import Foundation
import RoostPersistence
import RoostHTTP
import RoostProtocol

/// API.md "Media": `POST /v1/media` takes a photo or a PDF as the raw body, strips its metadata
/// on the way in (`MediaStripper`) and stores it in PostgreSQL a chunk at a time, so neither
/// the connection nor the handler ever holds the whole file; `GET /v1/media/{id}` gives it back
/// to those allowed to see it (its uploader, the members of a group it is linked into), with a
/// bearer token or the signed URL an attachment carries.
struct MediaRoutes: Sendable {
    let auth: Authentication
    let bridges: BridgeAuthentication
    let limits: AbuseLimits
    /// The client's address as the throttles count it (behind a trusted proxy, the forwarded one).
    let clientAddress: @Sendable (RequestContext) -> String
    /// At most `limits.uploadsPerUploader` uploads at once per account, bridge and address.
    let slots: UploadSlots
    /// Uploads waiting to be linked, per user.
    static let maxPending = 20

    init(auth: Authentication, bridges: BridgeAuthentication, limits: AbuseLimits, clientAddress: @escaping @Sendable (RequestContext) -> String) {
        self.auth = auth
        self.bridges = bridges
        self.limits = limits
        self.clientAddress = clientAddress
        slots = UploadSlots(perKey: limits.uploadsPerUploader)
    }

    var pool: ConnectionPool { auth.pool }

    func add(to builder: inout Router.Builder) {
        builder.add(.post, "/v1/media", bodyLimit: limits.maxUploadBytes, streamedBody: true) { context in try await upload(context) }
        builder.add(.get, "/v1/media/{id:uuid}") { context in try await download(context) }
    }

    // MARK: - Upload

    private struct Uploader {
        let tenant: UUID
        let type: String
        let id: UUID
    }

    private func uploader(_ context: RequestContext) async throws -> Uploader {
        if context.bearerToken?.hasPrefix(TenantToken.bridge) == true {
            let (tenant, bridge) = try await bridges.admit(context, signedBody: false)
            return Uploader(tenant: tenant, type: "bridge", id: bridge.id)
        }
        let user = try await auth.user(auth.sessionToken(context.bearerToken))
        return Uploader(tenant: user.tenantID, type: "user", id: user.id)
    }

    static func quotaExceeded(_ quota: Int) -> APIError {
        APIError(.payloadTooLarge, code: .quotaExceeded, message: "this neighbourhood's media storage (\(quota >> 20) MiB) is full")
    }

    static func shareExceeded(_ share: Int, bridge: Bool) -> APIError {
        APIError(.payloadTooLarge, code: .quotaExceeded,
                 message: "this \(bridge ? "bridge's" : "member's") share of the neighbourhood's media storage (\(share >> 10) KiB) is used up; "
                     + "delete or let expire what is not needed")
    }

    private func upload(_ context: RequestContext) async throws -> HTTPResponse {
        let uploader = try await uploader(context)
        guard let body = context.bodyStream else { preconditionFailure("POST /v1/media is a streamed route") }
        let keys = ["\(uploader.type):\(uploader.id.lowercasedText)", "address:\(clientAddress(context))"]
        guard slots.take(keys) else {
            throw APIError(.tooManyRequests, code: .rateLimited,
                           message: "\(slots.perKey) uploads are running already from this \(uploader.type == "bridge" ? "bridge" : "account") or address; wait for one to finish",
                           headers: ["Retry-After": "5"])
        }
        defer { slots.release(keys) }
        // A bridge's snapshots are for its alerts; a member says so with `?for=alert`.
        let purpose = context.request.target.queryValue("for")
        guard purpose == nil || purpose == "alert" else { throw APIError.invalid("for is alert, or absent", "for") }
        let forAlert = uploader.type == "bridge" || purpose == "alert"
        let quota = limits.tenantMediaQuotaBytes
        let (used, own, pending) = try await pool.withConnection { connection in
            try connection.withTenantTransaction(uploader.tenant) {
                try MediaStore().standing(tenant: uploader.tenant, uploaderType: uploader.type, uploader: uploader.id, on: $0)
            }
        }
        if uploader.type == "user" && pending >= Self.maxPending {
            throw APIError(.tooManyRequests, code: .rateLimited,
                           message: "\(Self.maxPending) uploads already wait to be linked into a message; use them or let them expire",
                           headers: ["Retry-After": "3600"])
        }
        // Ordinary uploads stop short of the alert reserve; every uploader keeps to their share.
        let ceiling = forAlert ? quota : quota - quota / 100 * limits.mediaAlertReservePercent
        let share = quota / 100 * limits.mediaSharePercent
        let (tenantRoom, shareRoom) = (ceiling - used, share - own)
        let room = min(tenantRoom, shareRoom)
        let refusal = shareRoom < tenantRoom ? Self.shareExceeded(share, bridge: uploader.type == "bridge") : Self.quotaExceeded(quota)
        if let declared = context.request.headers["Content-Length"].flatMap(Int.init), declared > room { throw refusal }

        var writer = BlobWriter(pool: pool, tenant: uploader.tenant, room: room, ceiling: ceiling, forAlert: forAlert, refusal: refusal)
        var stripper = MediaStripper(contentType: context.request.headers["Content-Type"])
        do {
            while let part = try await body.next() {
                try await writer.write(try stripper.feed(part[...]), type: stripper.type)
            }
            try await writer.write(try stripper.finish(), type: stripper.type, last: true)
        } catch {
            await writer.abandon()
            if let rejection = error as? MediaRejection {
                switch rejection {
                case .malformed(let message): throw APIError(.badRequest, code: .validationFailed, message: message)
                case .unsupported(let message): throw APIError(.unsupportedMediaType, code: .unsupportedMediaType, message: message)
                }
            }
            throw error
        }
        let finished = try await writer.finish(uploader: uploader, width: stripper.width, height: stripper.height, patch: stripper.patch)
        return try APIJSON.response(.created, MediaView(finished))
    }

    /// The stripped bytes on their way into `media_chunks`: gathered into 256 KiB rows, each
    /// written in a transaction of its own, so an upload holds a pooled connection only while a
    /// row is written.
    private struct BlobWriter {
        let pool: ConnectionPool
        let tenant: UUID
        let room: Int
        /// The tenant's usage this upload may reach (below the alert reserve unless `forAlert`).
        let ceiling: Int
        let forAlert: Bool
        /// What a write past `room` is answered with.
        let refusal: APIError
        let id = UUID()
        var pending: [UInt8] = []
        var chunks = 0
        var bytes = 0
        var begun = false
        let hash = SHA256Stream()

        mutating func write(_ output: [UInt8], type: MediaType?, last: Bool = false) async throws {
            bytes += output.count
            guard bytes <= room else { throw refusal }
            pending += output
            while pending.count >= MediaStore.chunkBytes || (last && !pending.isEmpty) {
                let data = Array(pending.prefix(MediaStore.chunkBytes))
                pending.removeFirst(data.count)
                let (tenant, id, index, first) = (tenant, id, chunks, !begun)
                let contentType = type?.rawValue ?? ""
                try await pool.withConnection { connection in
                    try connection.withTenantTransaction(tenant) { connection in
                        if first { try MediaStore().beginBlob(tenant: tenant, id: id, contentType: contentType, on: connection) }
                        try MediaStore().appendChunk(tenant: tenant, blob: id, index: index, data: data, on: connection)
                    }
                }
                begun = true
                chunks += 1
                hash.update(data)
            }
        }

        func abandon() async {
            guard begun else { return }
            let (tenant, id) = (tenant, id)
            // Best effort: if this fails too, the blob's expiry job removes it.
            _ = try? await pool.withConnection { connection in
                try connection.withTenantTransaction(tenant) { try MediaStore().abandon(blob: id, on: $0) }
            }
        }

        /// The upload made; 413 when the tenant's quota filled meanwhile.
        func finish(uploader: Uploader, width: Int?, height: Int?, patch: (offset: Int, bytes: [UInt8])?) async throws -> MediaRecord {
            // A patched header (WebP's size) changes bytes already hashed: PostgreSQL hashes the stored ones.
            let digest = patch == nil ? hash.finish() : nil
            let (tenant, id, bytes, ceiling, forAlert) = (tenant, id, bytes, ceiling, forAlert)
            for attempt in 1...2 {
                do {
                    return try await pool.withConnection { connection in
                        try connection.withTenantTransaction(tenant) { connection in
                            let finished = try MediaStore().finish(tenant: tenant, blob: id, uploaderType: uploader.type, uploader: uploader.id,
                                                                   bytes: bytes, width: width, height: height, sha256: digest, patch: patch,
                                                                   quota: ceiling, forAlert: forAlert, on: connection)
                            // Over the quota: the transaction rolls back (the blob stays unfinished, for `abandon`).
                            guard case .stored(let record) = finished else { throw MediaRoutes.quotaExceeded(ceiling) }
                            return record
                        }
                    }
                } catch let error as DatabaseError where error.code == .uniqueViolation && attempt == 1 {
                    continue  // an identical upload finished first: share its bytes
                } catch let error as APIError {
                    await abandon()
                    throw error
                }
            }
            preconditionFailure("unreachable: the second attempt returns or throws")
        }
    }

    // MARK: - Download

    private func download(_ context: RequestContext) async throws -> HTTPResponse {
        let id = context.parameters.uuid("id")!
        let notFound = APIError(.notFound, code: .notFound, message: "no such media")
        let target = context.request.target
        let record: MediaRecord?
        let tenant: UUID
        if let signature = target.queryValue("sig") {
            // A signed URL: anyone holding it, until it expires.
            guard let tenantText = target.queryValue("tenant"), let owner = UUID(text: tenantText),
                  let expiry = target.queryValue("exp").flatMap(Int64.init), expiry > Int64(Date().timeIntervalSince1970) else { throw notFound }
            tenant = owner
            record = try await pool.withConnection { connection in
                try connection.withTenantTransaction(owner) { connection -> MediaRecord? in
                    let key = try MediaStore().urlKey(on: connection)
                    let message = Array("\(owner.lowercasedText).\(id.lowercasedText).\(expiry)".utf8)
                    let expected = Digest.hex(Digest.sha256(key.outer + Digest.sha256(key.inner + message)))
                    guard Secrets.constantTimeEqual(Array(expected.utf8), Array(signature.utf8)) else { return nil }
                    return try MediaStore().record(id, on: connection)
                }
            }
        } else if context.bearerToken?.hasPrefix(TenantToken.bridge) == true {
            let (owner, bridge) = try await bridges.admit(context)
            tenant = owner
            record = try await pool.withConnection { connection in
                try connection.withTenantTransaction(owner) { try MediaStore().visible(id, to: .bridge(bridge.id, group: bridge.groupID), on: $0) }
            }
        } else {
            let token = try auth.sessionToken(context.bearerToken)
            tenant = token.tenant
            record = try await auth.asUser(token) { user, connection in try MediaStore().visible(id, to: .user(user.id), on: connection) }
        }
        guard let record else { throw notFound }
        return try Self.respond(with: record, tenant: tenant, context, pool: pool)
    }

    /// The bytes, whole or the one range asked for, streamed a stored chunk at a time.
    static func respond(with record: MediaRecord, tenant: UUID, _ context: RequestContext, pool: ConnectionPool) throws -> HTTPResponse {
        let etag = "\"\(Digest.hex(record.sha256))\""
        var headers: HTTPHeaders = ["Content-Type": record.contentType, "ETag": etag, "Cache-Control": "private, max-age=3600",
                                    "X-Content-Type-Options": "nosniff", "Accept-Ranges": "bytes",
                                    "Content-Disposition": record.contentType.hasPrefix("image/") ? "inline" : "attachment; filename=\"\(record.id.lowercasedText).pdf\""]
        if context.request.headers["If-None-Match"] == etag { return HTTPResponse(status: .notModified, headers: headers) }
        var range = 0..<record.bytes
        var status = HTTPStatus.ok
        if let asked = context.request.headers["Range"] {
            switch ByteRange.parse(asked, size: record.bytes) {
            case .none:
                throw APIError(.rangeNotSatisfiable, code: .rangeNotSatisfiable, message: "the range is outside the file's \(record.bytes) bytes",
                               headers: ["Content-Range": "bytes */\(record.bytes)"])
            case .some(nil):
                break  // not a single byte range: the whole file
            case .some(let parsed?):
                range = parsed
                status = .partialContent
                headers.replace("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(record.bytes)")
            }
        }
        return .streamed(status, headers: headers, length: range.count, BlobReader(pool: pool, tenant: tenant, blob: record.blob, range: range))
    }

    /// Reads a blob's chunks in order, cut to the range.
    final class BlobReader: ResponseBodySource, @unchecked Sendable {
        // Unchecked: `next()` is called one piece at a time, never concurrently (ResponseBodySource).
        let pool: ConnectionPool
        let tenant: UUID
        let blob: UUID
        let range: Range<Int>
        private var position: Int

        init(pool: ConnectionPool, tenant: UUID, blob: UUID, range: Range<Int>) {
            self.pool = pool
            self.tenant = tenant
            self.blob = blob
            self.range = range
            position = range.lowerBound
        }

        func next() async throws -> [UInt8]? {
            guard position < range.upperBound else { return nil }
            let index = position / MediaStore.chunkBytes
            let (tenant, blob) = (tenant, blob)
            guard let chunk = try await pool.withConnection({ connection in
                try connection.withTenantTransaction(tenant) { try MediaStore().chunk(blob: blob, index: index, on: $0) }
            }) else { throw DatabaseError(.decoding, "media chunk \(index) of \(blob) is missing") }
            let start = position - index * MediaStore.chunkBytes
            let end = min(chunk.count, range.upperBound - index * MediaStore.chunkBytes)
            guard start < end else { throw DatabaseError(.decoding, "media chunk \(index) of \(blob) is shorter than its blob says") }
            position += end - start
            return Array(chunk[start..<end])
        }
    }
}

/// One `Range: bytes=a-b` (RFC 9110 §14.1.2), the common forms: `a-b`, `a-`, `-n`: the range;
/// `.some(nil)` for anything else (several ranges, another unit), which gets the whole file, as
/// RFC 9110 allows; nil when the range lies outside the file (416).
enum ByteRange {
    static func parse(_ header: String, size: Int) -> Range<Int>?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .some(nil) }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return .some(nil) }
        let (first, last) = (Int(spec[0]), Int(spec[1]))
        // A range that is not numbers is no range at all: ignored (RFC 9110 §14.2).
        guard spec[0].isEmpty || first != nil, spec[1].isEmpty || last != nil, !(spec[0].isEmpty && spec[1].isEmpty) else { return .some(nil) }
        if spec[0].isEmpty {
            guard let suffix = last, suffix > 0, size > 0 else { return nil }
            return max(0, size - suffix)..<size
        }
        guard let start = first, start < size else { return nil }
        let end = spec[1].isEmpty ? size - 1 : min(last!, size - 1)
        guard end >= start else { return nil }
        return start..<(end + 1)
    }
}

/// An upload as `POST /v1/media` answers it.
struct MediaView: Encodable {
    let record: MediaRecord

    init(_ record: MediaRecord) { self.record = record }

    enum CodingKeys: String, CodingKey {
        case id, bytes, sha256, width, height
        case contentType = "content_type"
        case expiresAt = "expires_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.id.lowercasedText, forKey: .id)
        try container.encode(record.contentType, forKey: .contentType)
        try container.encode(record.bytes, forKey: .bytes)
        try container.encode(Digest.hex(record.sha256), forKey: .sha256)
        try container.encodeIfPresent(record.width, forKey: .width)
        try container.encodeIfPresent(record.height, forKey: .height)
        try container.encode(record.expiresAt, forKey: .expiresAt)
    }
}

/// The scheduler's media round: an upload still unlinked a day on, and the bytes of one that
/// never completed (the node died mid-upload), are deleted; each a job of its own.
struct MediaExpiries: Sendable {
    let pool: ConnectionPool
    let runner: JobRunner
    static let perBatch = 50

    /// One round; with `tenant`, of that tenant's only. How many uploads or blobs went.
    @discardableResult
    func runOnce(tenant: UUID? = nil) async throws -> Int {
        try await runner.drain(.mediaExpiry, pool: pool, perBatch: Self.perBatch,
                               claim: { try JobStore().claimDue(.mediaExpiry, limit: Self.perBatch, tenant: tenant, on: $0) },
                               handle: { job, connection -> Bool? in try MediaStore().expire(job.id, on: connection) ? true : nil }).count
    }
}
