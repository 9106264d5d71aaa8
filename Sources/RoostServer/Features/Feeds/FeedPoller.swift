import Foundation
import RoostHTTP
import RoostPersistence
import RoostProtocol
import Synchronization

/// Polls the operator's CAP feeds (issue #60, docs/OPERATIONS.md "Official warnings"): each
/// feed once across all nodes when it is due (`FeedStore.claimDue`, a lease taken with
/// `SKIP LOCKED`), with a conditional GET through the outbound policy; new and changed entries
/// are read (fetched, when an entry links its CAP document, as a URL a stranger chose: public
/// addresses only), oldest first, and applied to every group of the feed's tenants that takes
/// warnings (`FeedWarnings`), each tenant in its own transaction. A feed that fails, answers
/// garbage or stalls costs its own poll and nothing else: the loop is its own task, no row is
/// locked while a feed answers, and every exchange ends by a deadline.
final class FeedPoller: Sendable {
    struct Options: Sendable {
        /// How often the loop looks for a due feed.
        var intervalMilliseconds = 1000
        /// How long a claimed feed is the claimer's before another node may poll it.
        var leaseSeconds = 300
        /// The whole of one fetch (the feed, or one document it links).
        var fetchSeconds = 30
        /// The `User-Agent` of every poll (`roost (+ROOST_PUBLIC_URL)` in service).
        var userAgent = "roost"
        /// Linked documents fetched in one poll; the rest wait for the next.
        var documentsPerPoll = 50
        var maxFeedBytes = 4 << 20
        var maxDocumentBytes = 1 << 20
    }

    private let pool: ConnectionPool
    private let fetch: OutboundFetch
    private let options: Options
    private let log: Log
    private let failures: FailureLog
    private let now: @Sendable () -> Date
    private let running = BackgroundTask()

    init(pool: ConnectionPool, network: OutboundNetwork, tls: TLSClientContext?, options: Options = Options(), log: Log,
         now: @escaping @Sendable () -> Date = Date.init) {
        self.pool = pool
        var fetch = OutboundFetch(network: network, tls: tls)
        fetch.userAgent = options.userAgent
        self.fetch = fetch
        self.options = options
        self.log = log
        failures = FailureLog(log: log)
        self.now = now
    }

    func start() {
        running.start { [self] in
            while !Task.isCancelled {
                do {
                    _ = try await runOnce()
                    failures.succeeded("feeds: a poll round failed; retrying")
                } catch {
                    failures.failed("feeds: a poll round failed; retrying", ["error": "\(error)"])
                }
                try? await Task.sleep(for: .milliseconds(options.intervalMilliseconds))
            }
        }
    }

    func stop() async {
        await running.stop()
    }

    /// Polls every feed due now, one after another: how many.
    @discardableResult
    func runOnce() async throws -> Int {
        var polled = 0
        while !Task.isCancelled, let feed = try await pool.withConnection({ [options] in try FeedStore().claimDue(lease: options.leaseSeconds, on: $0) }) {
            let outcome = await poll(feed)
            try await pool.withConnection { connection in
                try FeedStore().finish(feed.id, status: outcome.status, validators: outcome.validators, wait: feed.pollSeconds, on: connection)
            }
            polled += 1
        }
        return polled
    }

    struct Outcome {
        var status: String
        var validators = FeedStore.Validators.keep
    }

    /// One poll of one feed: what it came to (for `last_status` and the log).
    func poll(_ feed: CAPFeedRow) async -> Outcome {
        let fields = ["feed_id": feed.id.lowercasedText, "url": feed.url]
        var headers: [(String, String)] = []
        if let etag = feed.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = feed.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        var feedFetch = fetch
        feedFetch.maxBytes = options.maxFeedBytes
        feedFetch.accept = "application/atom+xml, application/rss+xml, application/cap+xml;q=0.9, application/xml;q=0.8, */*;q=0.1"
        let answer: OutboundFetch.Answer
        do {
            answer = try await feedFetch.getDetached(feed.url, from: .operator, headers: headers, deadline: .now + .seconds(options.fetchSeconds))
        } catch {
            log.warning("feeds: the feed could not be fetched", fields.merging(["error": "\(error)"]) { $1 })
            return Outcome(status: "failed: \(error)")
        }
        if answer.status == 304 { return Outcome(status: "not modified") }
        guard (200...299).contains(answer.status) else {
            log.warning("feeds: the feed answered an error", fields.merging(["status": String(answer.status)]) { $1 })
            return Outcome(status: "failed: HTTP \(answer.status)")
        }
        let validators = FeedStore.Validators.set(etag: answer.headers["etag"], lastModified: answer.headers["last-modified"])
        let listed: CAPFeed
        do {
            var limits = XMLReader.Limits()
            limits.maxBytes = options.maxFeedBytes
            listed = try CAPFeed.read(answer.body, limits: limits)
        } catch {
            log.warning("feeds: the feed was refused", fields.merging(["error": error.reason]) { $1 })
            return Outcome(status: "refused: \(error.reason)", validators: validators)
        }
        do {
            let summary = try await take(listed, of: feed, fields: fields)
            log.info("feeds: polled", fields.merging(summary.fields) { $1 })
            // Entries left for later (a document not reached, or past this poll's share) need the
            // feed read whole next time: a conditional GET's 304 would never list them again.
            return Outcome(status: summary.status, validators: summary.left > 0 ? .set(etag: nil, lastModified: nil) : validators)
        } catch {
            // The database was away: the entries not yet taken are taken next time.
            log.warning("feeds: the feed's warnings could not be applied", fields.merging(["error": "\(error)"]) { $1 })
            return Outcome(status: "failed: \(error)")
        }
    }

    private struct Summary {
        var entries = 0
        var read = 0
        var refused = 0
        /// Entries to read at the next poll.
        var left = 0
        var tally = FeedWarnings.Tally()

        var status: String {
            "ok: \(entries) entries, \(read) read, \(refused) refused\(left > 0 ? ", \(left) left for the next poll" : ""); "
                + "\(tally.raised) raised, \(tally.updated) updated, \(tally.closed) closed"
        }
        var fields: [String: String] {
            ["entries": String(entries), "read": String(read), "refused": String(refused), "left": String(left), "raised": String(tally.raised),
             "updated": String(tally.updated), "closed": String(tally.closed)]
        }
    }

    /// Reads the entries not taken before and applies their alerts, oldest first.
    private func take(_ listed: CAPFeed, of feed: CAPFeedRow, fields: [String: String]) async throws -> Summary {
        var summary = Summary(entries: listed.entries.count)
        let keys = listed.entries.map(\.key).filter { !$0.isEmpty }
        let taken = try await pool.withConnection { try FeedStore().taken(feed: feed.id, keys: keys, on: $0) }
        var documents: [(entry: CAPFeed.Entry, alert: CAPAlert)] = []
        var fetched = 0
        for entry in listed.entries where !entry.key.isEmpty && taken[entry.key] != entry.updated {
            switch entry.content {
            case .alert(let alert):
                documents.append((entry, alert))
            case .refused(let reason):
                summary.refused += 1
                log.warning("feeds: an entry was refused", fields.merging(["entry": entry.key, "error": reason]) { $1 })
                try await markTaken(entry, of: feed)
            case .link(let url):
                guard fetched < options.documentsPerPoll else {
                    summary.left += 1
                    continue
                }
                fetched += 1
                switch await document(url) {
                case .success(let alert): documents.append((entry, alert))
                case .failure(.refused(let reason)):
                    summary.refused += 1
                    log.warning("feeds: an entry's document was refused", fields.merging(["entry": entry.key, "document": url, "error": reason]) { $1 })
                    try await markTaken(entry, of: feed)
                case .failure(.unreachable(let reason)):
                    // Tried again at the next poll.
                    summary.left += 1
                    log.warning("feeds: an entry's document could not be fetched", fields.merging(["entry": entry.key, "document": url, "error": reason]) { $1 })
                }
            }
        }
        documents.sort { $0.alert.sent < $1.alert.sent }
        let alerts = documents.map(\.alert).filter { feed.sender == nil || $0.sender == feed.sender }
        summary.read = documents.count
        if !alerts.isEmpty {
            let tenants = try await pool.withConnection { try FeedStore().tenants(of: feed, on: $0) }
            let warnings = FeedWarnings(feed: feed, now: now())
            for tenant in tenants {
                summary.tally = try await pool.withConnection { [summary] connection in
                    try connection.withTenantTransaction(tenant) { connection in
                        var tally = summary.tally
                        let groups = FeedWarnings.placed(try FeedStore().groups(on: connection))
                        guard !groups.isEmpty else { return tally }
                        for alert in alerts { try warnings.apply(alert, tenant: tenant, groups: groups, tally: &tally, on: connection) }
                        return tally
                    }
                }
            }
            if summary.tally != FeedWarnings.Tally() { DeliveryBell.shared.ring() }
        }
        for (entry, _) in documents { try await markTaken(entry, of: feed) }
        try await pool.withConnection { try FeedStore().stillListed(feed: feed.id, keys: keys, on: $0) }
        return summary
    }

    private func markTaken(_ entry: CAPFeed.Entry, of feed: CAPFeedRow) async throws {
        try await pool.withConnection { try FeedStore().markTaken(feed: feed.id, key: entry.key, updated: entry.updated, on: $0) }
    }

    private enum DocumentFailure: Error {
        /// Not a CAP alert Roost takes: not asked for again until the entry changes.
        case refused(String)
        /// Not reached this time.
        case unreachable(String)
    }

    /// A linked CAP document, fetched as a stranger's URL and read.
    private func document(_ url: String) async -> Result<CAPAlert, DocumentFailure> {
        var documentFetch = fetch
        documentFetch.maxBytes = options.maxDocumentBytes
        documentFetch.accept = "application/cap+xml, application/xml;q=0.9, */*;q=0.1"
        let answer: OutboundFetch.Answer
        do {
            answer = try await documentFetch.getDetached(url, from: .subscriber, deadline: .now + .seconds(options.fetchSeconds))
        } catch {
            return .failure(error.isRefusal ? .refused("\(error)") : .unreachable("\(error)"))
        }
        guard (200...299).contains(answer.status) else { return .failure(.unreachable("HTTP \(answer.status)")) }
        do {
            return .success(try CAPAlert.read(answer.body))
        } catch {
            return .failure(.refused(error.reason))
        }
    }
}
