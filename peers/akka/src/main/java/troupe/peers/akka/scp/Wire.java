// Marks the SCP messages that cross JVMs when the injector runs in its own JVM (injector = "node");
// Main binds it to Akka's jackson-cbor serializer (akka.actor.serialization-bindings). With the
// injector in the measured JVM nothing is serialized and the marker has no effect.
package troupe.peers.akka.scp;

interface Wire {}
