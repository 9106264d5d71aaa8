import Foundation
import RoostPersistence
import RoostTestSupport
import Testing

/// The rules on the columns every post and alert writes are domains (sql/0041_checks_as_domains.sql):
/// PostgreSQL enforces them on every write, as it did the CHECK constraints they replace, and
/// parses them once a backend, where a table's CHECKs are parsed again in every statement.
@Suite(.enabled(if: TestDatabase.isConfigured, "needs TEST_DATABASE_URL (scripts/test sets it)"))
struct SchemaRuleTests {
    let connection: PostgresConnection

    init() throws {
        connection = try TestDatabase.migratedConnection()
    }

    /// Each ruled column, the domain it has, a value its rule refuses and one it takes.
    static let rules: [(table: String, column: String, domain: String, refused: String, taken: String)] = [
        ("group_events", "seq", "roost_seq", "0", "1"),
        ("group_events", "event", "roost_event_name", "Message.Created", "message.created"),
        ("group_events", "actor_type", "roost_actor_type", "robot", "feed"),
        ("messages", "author_type", "roost_actor_type", "robot", "bridge"),
        ("messages", "kind", "roost_message_kind", "poll", "alert"),
        ("messages", "text", "roost_message_text", String(repeating: "x", count: 4001), String(repeating: "x", count: 4000)),
        ("messages", "client_msg_id", "roost_idempotency_key", "", "c1"),
        ("messages", "system_key", "roost_idempotency_key", String(repeating: "k", count: 201), "k"),
        ("alerts", "severity", "roost_alert_severity", "purple", "red"),
        ("alerts", "status", "roost_alert_status", "pending", "closed"),
        ("alerts", "resolution", "roost_alert_resolution", String(repeating: "r", count: 2001), "handled"),
        ("alerts", "dedup_key", "roost_idempotency_key", "", "siren-1"),
        ("alerts", "escalation_level", "roost_escalation_level", "4", "3"),
        ("alerts", "closed_by_type", "roost_actor_type", "robot", "user"),
    ]

    @Test func eachRuledColumnHasItsDomain() throws {
        for rule in Self.rules {
            let found = try connection.query("""
                SELECT domain_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = \(rule.table) AND column_name = \(rule.column)
                """).rows.first?.decode(String?.self, "domain_name")
            #expect(found == rule.domain, "\(rule.table).\(rule.column)")
        }
    }

    @Test func eachDomainRefusesWhatTheCheckRefusedAndTakesTheRest() throws {
        for rule in Self.rules {
            let base = rule.domain == "roost_seq" ? "bigint" : rule.domain == "roost_escalation_level" ? "smallint" : "text"
            let taken = try connection.query("SELECT (\(rule.taken)::\(unsafeRaw: base))::\(unsafeRaw: rule.domain)::text AS v").rows[0]
            #expect(try taken.decode(String.self, "v") == rule.taken, "\(rule.domain) takes \(rule.taken.prefix(20))")
            #expect(performing: {
                try connection.query("SELECT (\(rule.refused)::\(unsafeRaw: base))::\(unsafeRaw: rule.domain) AS v")
            }, throws: { error in
                (error as? DatabaseError)?.sqlState == "23514"
            })
        }
    }

    @Test func theseTablesKeepOnlyTheirRulesOverTwoColumnsAsCHECKs() throws {
        // A one-column rule added to these tables as a CHECK would be parsed in every statement
        // that writes them: make it a domain (sql/0041_checks_as_domains.sql says why).
        let checks = try connection.query("""
            SELECT conrelid::regclass::text || '.' || conname AS name FROM pg_constraint
            WHERE contype = 'c' AND conrelid::regclass::text IN ('group_events', 'messages', 'alerts') ORDER BY 1
            """).rows.map { try $0.decode(String.self, "name") }
        #expect(checks == ["alerts.alerts_check", "messages.messages_one_idempotency_key"])
    }
}
