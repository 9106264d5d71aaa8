// RoostFanout: who listens to which group on this node, encode-once write-many delivery,
// the LISTEN/NOTIFY bridge between nodes, and replay from a cursor (DESIGN.md, "Modules").
// It is built by the messaging issue; until then the module holds nothing but this note.
