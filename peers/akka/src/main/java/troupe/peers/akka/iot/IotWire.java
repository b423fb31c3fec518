// Marks the IoT messages that cross processes (device <-> server over Artery, orchestrator ->
// server, and the device status values inside Distributed Data); Node binds it to Akka's
// jackson-cbor serializer (akka.actor.serialization-bindings).
package troupe.peers.akka.iot;

interface IotWire {}
