/// The languages Roost's messages to people outside the app are shipped in (`templates/`); a
/// tenant's `locale` is one of them.
enum MessageLocale {
    static let shipped: Set<String> = ["en", "da"]
}
