// RoostFanout: who listens to which group on this node, encode-once write-many delivery,
// the LISTEN/NOTIFY bridge between nodes, and replay from a cursor (DESIGN.md, "Modules").
//
// FanoutHub.swift   the node's subscriptions and the ordered, gapless delivery of each group's events
// StreamFrames.swift the stream's server frames, encoded once per event
