import Foundation
import RoostHTTP
import RoostProtocol
import RoostServer

/// The `roost` command line: parses arguments and calls RoostServer; nothing else lives here.
@main
struct Roost {
    static let usage = """
        Usage: roost <command> [options]

        Commands:
          serve                      run the server (roost serve --help lists every option)
          --version                  the release and the newest migration this binary ships
          sql --tenant SLUG [-- ARGS]  psql on DATABASE_URL with the tenant set (row security shows its rows)
          migrate                    apply database migrations and exit
          tenant create SLUG --name NAME [--registration open|invite_only]
          tenant update SLUG [--name NAME] [--registration open|invite_only] [--sms-prefixes +45,+46|all]
                                     [--retention-days DAYS|none] [--locale en|da]
          tenant list
          feed add URL --tenant SLUG[,SLUG...]|--all [--name NAME] [--poll-s SECONDS] [--sender SENDER]
          feed list | feed remove ID | feed poll ID
                                     the CAP feeds of official warnings Roost polls for the tenants' groups
          outbox list --failed       deliveries that ran out of attempts (id, tenant, channel, template, attempts, last error)
          outbox retry ID            queue a failed delivery again with a fresh set of attempts
          jobs list --failed         parked background jobs (check-in deadlines, bridge watches) and failed deliveries
          jobs retry KIND ID         run a parked job again with a fresh set of attempts
          audit --tenant SLUG [--since TIME] [--limit N]
                                     who did what to the tenant's groups, newest first, a JSON object a line
          help                       this text

        Every command takes the serve options that concern the database (--database-url, ...).
        """

    static let databaseNote = "\n\n"
        + ServerConfiguration.optionsHelp(ServerConfiguration.databaseFlags)

    static let tenantUsage = """
        Usage: roost tenant create SLUG --name NAME [--registration open|invite_only]
               roost tenant update SLUG [--name NAME] [--registration open|invite_only] [--sms-prefixes +45,+46|all]
                                        [--retention-days DAYS|none] [--locale en|da]
               roost tenant list

        Options:
          --name NAME                        the tenant's name, 1 to 200 characters (required by create)
          --registration open|invite_only    who may register: anyone, or only invited people (default: open)
          --sms-prefixes +45,+46|all         the countries (E.164 prefixes) invitations and codes go to by SMS (default: all)
          --retention-days DAYS|none         days the groups keep messages, alerts and answers, 1 to 36500 (a group's
                                             owner may keep them for less; open alerts stay); none: for good (default)
          --locale en|da                     the language of the tenant's rendered email and Web Push text (default: en)
        """ + databaseNote

    static let outboxUsage = """
        Usage: roost outbox list --failed
               roost outbox retry ID

          list --failed    deliveries that ran out of attempts, one a line: id, tenant, channel, template,
                           attempts, last error (tab-separated)
          retry ID         queue a failed delivery again with a fresh set of attempts
        """ + databaseNote

    static let feedUsage = """
        Usage: roost feed add URL --tenant SLUG[,SLUG...]|--all [--name NAME] [--poll-s SECONDS] [--sender SENDER]
               roost feed list
               roost feed remove ID
               roost feed poll ID

          add URL          poll an Atom or RSS feed of CAP warnings (or one CAP document) for these tenants'
                           groups that take official warnings; --poll-s at least ROOST_FEED_MIN_POLL_S (120),
                           300 by default; --sender keeps only that sender's alerts; --name is the author
                           members see (default: the URL's host)
          list             the feeds, one a line: id, poll interval, tenants, URL, last poll's outcome (tab-separated)
          remove ID        stop polling a feed (its alerts stay in their groups)
          poll ID          poll a feed at the next round, whatever its interval
        """ + databaseNote

    static let jobsUsage = """
        Usage: roost jobs list --failed
               roost jobs retry KIND ID

          list --failed    jobs that failed too often and wait for an operator, one a line: kind, id, tenant,
                           attempts, last error (tab-separated); kinds: checkin_deadline, bridge_watch,
                           alert_escalation, live_location, checkin_request_expiry, password_reset, retention,
                           media_expiry, cap_expiry, outbox
          retry KIND ID    run a parked job again with a fresh set of attempts (outbox: as roost outbox retry)
        """ + databaseNote

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else { exitUsage(usage) }
        arguments.removeFirst()
        do {
            switch command {
            case "serve":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(ServerConfiguration.helpText) }
                try await RoostCommands.serve(load(arguments))
            case "migrate":
                if arguments.contains("--help") || arguments.contains("-h") {
                    exitHelp("Usage: roost migrate [options]\n\nApplies the migrations the database lacks, prints their names, and exits."
                             + databaseNote)
                }
                let applied = try await RoostCommands.migrate(load(arguments))
                print(applied.isEmpty ? "database is up to date" : "applied \(applied.joined(separator: ", "))")
            case "tenant":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(tenantUsage) }
                try await tenant(arguments)
            case "outbox":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(outboxUsage) }
                try await outbox(arguments)
            case "feed":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(feedUsage) }
                try await feed(arguments)
            case "jobs":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(jobsUsage) }
                try await jobs(arguments)
            case "audit":
                if arguments.contains("--help") || arguments.contains("-h") { exitHelp(auditUsage) }
                try await audit(arguments)
            case "sql":
                if arguments.contains("--help") || arguments.contains("-h") {
                    exitHelp("Usage: roost sql --tenant SLUG [-- PSQL_ARGUMENTS]\n\nOpens psql on DATABASE_URL with the tenant set, so that row "
                             + "security shows its rows (without a tenant every table reads empty). Arguments after -- go to psql "
                             + "(-c 'SELECT count(*) FROM messages')." + databaseNote)
                }
                try await sql(arguments)
            case "--version", "version":
                let configuration = (try? ServerConfiguration.load(environment: ProcessInfo.processInfo.environment, arguments: [])) ?? ServerConfiguration()
                print(RoostBuild.describe(schema: DatabaseStartup.requiredSchema(configuration)))
            case "help", "--help", "-h":
                exitHelp(usage)
            default:
                exitUsage("roost: unknown command '\(command)'; run roost help")
            }
        } catch let error as ConfigurationError {
            exitUsage("roost: \(error.description)")
        } catch let error as StartupError {
            fail(error.description)
        } catch {
            fail("\(error)")
        }
    }

    private static func tenant(_ arguments: [String]) async throws {
        var arguments = arguments
        guard let action = arguments.first else { exitUsage("roost: tenant needs create, update or list; run roost help") }
        arguments.removeFirst()
        switch action {
        case "create":
            guard let slug = arguments.first, !slug.hasPrefix("-") else {
                exitUsage("roost: tenant create needs a SLUG; run roost help")
            }
            arguments.removeFirst()
            let name = try take("--name", from: &arguments)
            let registration = try take("--registration", from: &arguments) ?? "open"
            guard let name else { exitUsage("roost: tenant create needs --name NAME") }
            let tenant = try await RoostCommands.createTenant(
                load(arguments), slug: slug, name: name, registration: registration)
            print("created tenant \(tenant.slug) (\(tenant.id.lowercasedText)), registration \(tenant.registration.rawValue)")
        case "update":
            guard let slug = arguments.first, !slug.hasPrefix("-") else {
                exitUsage("roost: tenant update needs a SLUG; run roost help")
            }
            arguments.removeFirst()
            let name = try take("--name", from: &arguments)
            let registration = try take("--registration", from: &arguments)
            let prefixes = try take("--sms-prefixes", from: &arguments)
            let retention = try take("--retention-days", from: &arguments)
            let locale = try take("--locale", from: &arguments)
            let tenant = try await RoostCommands.updateTenant(load(arguments), slug: slug, name: name, registration: registration,
                                                              smsPrefixes: prefixes, retentionDays: retention, locale: locale)
            print("updated tenant \(tenant.slug): name \(tenant.name), registration \(tenant.registration.rawValue)"
                  + (prefixes.map { ", SMS to \($0)" } ?? "")
                  + (retention.map { _ in ", history kept " + (tenant.retentionDays.map { "\($0) days" } ?? "for good") } ?? "")
                  + ", messages in \(tenant.locale)")
        case "list":
            for tenant in try await RoostCommands.listTenants(load(arguments)) {
                print("\(tenant.slug)\t\(tenant.id.lowercasedText)\t\(tenant.registration.rawValue)\t\(tenant.name)")
            }
        default:
            exitUsage("roost: unknown tenant action '\(action)'; run roost help")
        }
    }

    static let auditUsage = """
        Usage: roost audit --tenant SLUG [--since TIME] [--limit N]

        Who changed roles, removed members, sent and revoked invitations, created and revoked bridges,
        closed and reopened alerts, replaced templates, changed settings and escalation contacts, and
        deleted groups, across the tenant's groups, newest first, one JSON object a line.

        Options:
          --tenant SLUG    the tenant (required)
          --since TIME     only from this time on (RFC 3339, e.g. 2026-11-01T00:00:00Z)
          --limit N        at most N entries (default 1000)
        """ + databaseNote

    private static func sql(_ arguments: [String]) async throws {
        let split = arguments.firstIndex(of: "--")
        var own = Array(arguments[..<(split ?? arguments.endIndex)])
        let passed = split.map { Array(arguments[arguments.index(after: $0)...]) } ?? []
        guard let slug = try take("--tenant", from: &own) else { exitUsage("roost: sql needs --tenant SLUG") }
        let session = try await RoostCommands.sqlSession(load(own), tenant: slug)
        guard let psql = ["/usr/bin/psql", "/usr/local/bin/psql"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            fail("psql is not installed: apt-get install -y postgresql-client")
        }
        // The tenant as a setting of the session, read by row security's policies.
        setenv("PGOPTIONS", "-c roost.tenant_id=\(session.tenant.lowercasedText)", 1)
        let argv = [psql, session.url] + passed
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(psql, &cArguments)
        fail("could not start psql: \(String(cString: strerror(errno)))")
    }

    private static func audit(_ arguments: [String]) async throws {
        var arguments = arguments
        guard let slug = try take("--tenant", from: &arguments) else { exitUsage("roost: audit needs --tenant SLUG") }
        var since: Date?
        if let text = try take("--since", from: &arguments) {
            guard let date = ISO8601DateFormatter().date(from: text) else { exitUsage("roost: --since must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z") }
            since = date
        }
        let limitText = try take("--limit", from: &arguments) ?? "1000"
        guard let limit = Int(limitText), (1...1_000_000).contains(limit) else { exitUsage("roost: --limit must be 1 to 1000000") }
        for line in try await RoostCommands.audit(load(arguments), tenant: slug, since: since, limit: limit) { print(line) }
    }

    private static func outbox(_ arguments: [String]) async throws {
        var arguments = arguments
        guard let action = arguments.first else { exitUsage("roost: outbox needs list or retry; run roost help") }
        arguments.removeFirst()
        switch action {
        case "list":
            guard let flag = arguments.firstIndex(of: "--failed") else { exitUsage("roost: outbox list needs --failed") }
            arguments.remove(at: flag)
            let lines = try await RoostCommands.failedDeliveries(load(arguments))
            for line in lines {
                let delivery = line.delivery
                let error = (delivery.lastError ?? "").replacingOccurrences(of: "\n", with: " ")
                print("\(delivery.id.lowercasedText)\t\(line.tenant)\t\(delivery.channel)\t\(delivery.template)\t\(delivery.attempts)\t\(error)")
            }
            if lines.isEmpty { FileHandle.standardError.write(Data("roost: no failed deliveries\n".utf8)) }
        case "retry":
            guard let id = arguments.first, !id.hasPrefix("-") else { exitUsage("roost: outbox retry needs a delivery ID") }
            arguments.removeFirst()
            let done = try await RoostCommands.retryDelivery(load(arguments), id: id)
            print("\(id.lowercased()): \(done)")
        default:
            exitUsage("roost: unknown outbox action '\(action)'; run roost help")
        }
    }

    private static func feed(_ arguments: [String]) async throws {
        var arguments = arguments
        guard let action = arguments.first else { exitUsage("roost: feed needs add, list, remove or poll; run roost feed --help") }
        arguments.removeFirst()
        switch action {
        case "add":
            guard let url = arguments.first, !url.hasPrefix("-") else { exitUsage("roost: feed add needs a URL") }
            arguments.removeFirst()
            let all = arguments.firstIndex(of: "--all").map { arguments.remove(at: $0) } != nil
            let tenants = try take("--tenant", from: &arguments)?.split(separator: ",").map(String.init)
            guard all != (tenants != nil) else { exitUsage("roost: feed add needs --tenant SLUG[,SLUG...] or --all, one of them") }
            let name = try take("--name", from: &arguments)
            let poll = try take("--poll-s", from: &arguments)
            guard poll.map({ Int($0) != nil }) ?? true else { exitUsage("roost: --poll-s must be a number of seconds") }
            let sender = try take("--sender", from: &arguments)
            let feed = try await RoostCommands.addFeed(load(arguments), url: url, name: name, tenants: tenants, pollSeconds: poll.flatMap { Int($0) },
                                                       sender: sender)
            print("added feed \(feed.id.lowercasedText) (\(feed.name)), polled every \(feed.pollSeconds) s for \(feed.tenants)")
        case "list":
            let feeds = try await RoostCommands.listFeeds(load(arguments))
            for feed in feeds {
                print("\(feed.id.lowercasedText)\t\(feed.pollSeconds)\t\(feed.tenants)\t\(feed.url)\t\(feed.lastStatus ?? "not polled yet")")
            }
            if feeds.isEmpty { FileHandle.standardError.write(Data("roost: no feeds\n".utf8)) }
        case "remove", "poll":
            guard let id = arguments.first, !id.hasPrefix("-") else { exitUsage("roost: feed \(action) needs a feed ID (roost feed list)") }
            arguments.removeFirst()
            let found = action == "remove" ? try await RoostCommands.removeFeed(load(arguments), id: id)
                : try await RoostCommands.pollFeed(load(arguments), id: id)
            guard found else { fail("no feed \(id)") }
            print(action == "remove" ? "removed feed \(id.lowercased())" : "feed \(id.lowercased()) is polled at the next round")
        default:
            exitUsage("roost: unknown feed action '\(action)'; run roost feed --help")
        }
    }

    private static func jobs(_ arguments: [String]) async throws {
        var arguments = arguments
        guard let action = arguments.first else { exitUsage("roost: jobs needs list or retry; run roost help") }
        arguments.removeFirst()
        switch action {
        case "list":
            guard let flag = arguments.firstIndex(of: "--failed") else { exitUsage("roost: jobs list needs --failed") }
            arguments.remove(at: flag)
            let lines = try await RoostCommands.failedJobs(load(arguments))
            for line in lines {
                let error = (line.lastError ?? "").replacingOccurrences(of: "\n", with: " ")
                print("\(line.kind)\t\(line.id.lowercasedText)\t\(line.tenant)\t\(line.attempts)\t\(error)")
            }
            if lines.isEmpty { FileHandle.standardError.write(Data("roost: no failed jobs\n".utf8)) }
        case "retry":
            guard arguments.count >= 2, !arguments[0].hasPrefix("-"), !arguments[1].hasPrefix("-") else {
                exitUsage("roost: jobs retry needs a KIND and an ID")
            }
            let (kind, id) = (arguments[0], arguments[1])
            arguments.removeFirst(2)
            try await RoostCommands.retryJob(load(arguments), kind: kind, id: id)
            print("queued \(kind) \(id.lowercased()) again")
        default:
            exitUsage("roost: unknown jobs action '\(action)'; run roost help")
        }
    }

    /// Removes `--flag VALUE` or `--flag=VALUE` from the arguments and returns the value.
    private static func take(_ flag: String, from arguments: inout [String]) throws -> String? {
        if let index = arguments.firstIndex(where: { $0.hasPrefix(flag + "=") }) {
            defer { arguments.remove(at: index) }
            return String(arguments[index].dropFirst(flag.count + 1))
        }
        guard let index = arguments.firstIndex(of: flag) else { return nil }
        guard index + 1 < arguments.count else { throw ConfigurationError("\(flag) needs a value") }
        defer { arguments.removeSubrange(index...(index + 1)) }
        return arguments[index + 1]
    }

    private static func load(_ arguments: [String]) throws -> ServerConfiguration {
        try ServerConfiguration.load(environment: ProcessInfo.processInfo.environment, arguments: arguments)
    }

    private static func exitHelp(_ text: String) -> Never {
        print(text)
        exit(0)
    }

    private static func exitUsage(_ text: String) -> Never {
        FileHandle.standardError.write(Data((text + "\n").utf8))
        exit(2)
    }

    private static func fail(_ text: String) -> Never {
        FileHandle.standardError.write(Data(("roost: error: " + text + "\n").utf8))
        exit(1)
    }
}
