// Marks the chat messages that cross nodes in the distributed deployment; Main binds it to
// Akka's jackson-cbor serializer (akka.actor.serialization-bindings). In one JVM nothing is
// serialized and the marker has no effect.
package troupe.peers.akka.chat;

interface Wire {}
