/// What this binary is, for `roost --version` and the `roost_build_info` metric: the release
/// (raised when main changes what operators see: its minor number counts the landings of the
/// issue tracker's stops) and the newest migration it ships, which its code needs applied.
public enum RoostBuild {
    public static let version = "0.66.0"

    /// `roost 0.66.0 (schema 34)`: the schema from the migrations found beside the binary, if any.
    public static func describe(schema: Int?) -> String {
        "roost \(version)" + (schema.map { " (schema \($0))" } ?? "")
    }

    /// The `roost_build_info` gauge (always 1; its labels say what runs).
    static func metric(schema: Int?) -> String {
        "# HELP roost_build_info The running build: its version and the newest migration it ships.\n"
            + "# TYPE roost_build_info gauge\n"
            + "roost_build_info{version=\"\(version)\",schema=\"\(schema.map(String.init) ?? "unknown")\"} 1\n"
    }
}
