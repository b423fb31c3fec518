// Owns the IoT wire protocol between devices (not cluster members) and servers (an Akka
// Cluster), and the collector's poll. Every message is a record marked IotWire (jackson-cbor).
//
// Rules (peers/akka/iot/smoke.sh checks 2, 3 and 5's owner side with Probe.java; 1, 3, 4 and 7
// through the events of its runs; 5's device side and 6 only as far as its server-kill run shows
// them):
//  1. A device knows every server's gateway by actor path (akka://iot@127.0.0.1:PORT/user/gateway)
//     and says Hello {device, incarnation, start_us, fresh, version} to one of them.
//  2. A gateway whose hash ring (akka.routing.ConsistentHash over the Up, reachable servers)
//     names another server answers Redirect {server}; a wrong version is answered Rejected
//     {reason}, counted in the server's errors; the owner starts a per-device Owner actor.
//  3. The Owner asks ReportRequest {seq, summed (the reports it summed so far)}; the device
//     answers Report {seq, values 1..=report_len}; the owner checks and sums it, adds it to the
//     device's total and asks seq + 1 at once. A report not received within report_timeout_ms
//     is asked again (a new seq; stale seqs are ignored). A malformed report (wrong length or
//     sum) disconnects the device: Disconnected {reason}, counted in the server's errors.
//  4. The Owner sends Heartbeat every heartbeat_ms; the device answers HeartbeatAck. Both run
//     Akka's PhiAccrualFailureDetector (threshold phi_threshold): the device on heartbeats, the
//     owner on acks. A device whose owner fails goes back to the seeds (fault_detected); an
//     owner whose device fails stops.
//  5. A device serves one owner at a time: requests from any other owner get Refused, and that
//     owner stops. A StandDown from its owner sends the device back to the seeds.
//  6. A gateway stands its Owner down when the ring moves the device elsewhere, or when the
//     replicated status (Distributed Data) shows another server owning a newer incarnation.
//  7. The orchestrator's collector asks every gateway GetTotals each second; Totals carries the
//     reports that server summed since it started.
package troupe.peers.akka.iot;

import akka.actor.typed.ActorRef;

final class Protocol {
    /** The protocol version a device announces in Hello; any other is refused. */
    static final int VERSION = 1;

    private Protocol() {}

    // ---- to a server's gateway ----
    interface ToGateway {}

    record Hello(int device, long incarnation, long startUs, boolean fresh, int version,
                 ActorRef<ToDevice> replyTo) implements ToGateway, IotWire {}

    record GetTotals(ActorRef<Totals> replyTo) implements ToGateway, IotWire {}

    record Totals(int server, long reports) implements IotWire {}

    // ---- to a device ----
    interface ToDevice {}

    record Redirect(int server) implements ToDevice, IotWire {}

    record Rejected(String reason) implements ToDevice, IotWire {}

    record ReportRequest(long seq, long summed, int server, ActorRef<ToOwner> owner) implements ToDevice, IotWire {}

    record Heartbeat(int server, ActorRef<ToOwner> owner) implements ToDevice, IotWire {}

    record StandDown(ActorRef<ToOwner> owner) implements ToDevice, IotWire {}

    record Disconnected(String reason, ActorRef<ToOwner> owner) implements ToDevice, IotWire {}

    // ---- to a per-device owner actor ----
    interface ToOwner {}

    record Report(long seq, long[] values) implements ToOwner, IotWire {}

    record HeartbeatAck(long incarnation) implements ToOwner, IotWire {}

    record Refused(int device) implements ToOwner, IotWire {}

    /** One device's replicated status (the value in the Distributed Data LWWMap). */
    record DeviceStatus(int server, long incarnation, long lastReportUs) implements IotWire {}

    /** The actor path of server s's gateway, given every server's port. */
    static String gatewayPath(int port) {
        return "akka://" + Node.SERVER_SYSTEM + "@127.0.0.1:" + port + "/user/gateway";
    }

    static String deviceName(int k) {
        return "device-" + k;
    }

    static String serverName(int s) {
        return "server-" + s;
    }
}
