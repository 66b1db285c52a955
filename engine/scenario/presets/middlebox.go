package presets

// middleboxDefaultsYAML is what a middlebox section gets when neither it nor a preset sets
// a field: AWS Network Firewall's 350 s, silently dropping.
const middleboxDefaultsYAML = `
idle_timeout: 350s
on_expiry: drop
reset_at: expiry
reset_to: both
`

// Middlebox presets model boxes that forget idle flows, each value cited from the vendor's
// documentation (Source).
var Middlebox = registry([]Preset{
	{
		Name:   "aws-nat-gateway",
		Models: "AWS NAT gateway: a flow idle for 350 s times out (not configurable); the next packet from behind the gateway gets an RST, nothing is sent at expiry",
		Source: "AWS VPC user guide, 'Troubleshoot NAT gateways' > 'Internet connection drops after 350 seconds' (https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-troubleshooting.html): 'If a connection that's using a NAT gateway is idle for 350 seconds or more, the connection times out. When a connection times out, a NAT gateway returns an RST packet to any resources behind the NAT gateway that attempt to continue the connection (it does not send a FIN packet)' - quoted from memory of that page, which the search here did not return; the same 350 s and 'sends the next outbound packet an RST' in https://cloudnetworking.pro/cloud-nat-timeouts-demystified. What the gateway does with the server's packets after the timeout is not documented: dropped here",
		YAML:   "idle_timeout: 350s\non_expiry: reset\nreset_at: next-segment\nreset_to: client",
	},
	{
		Name:   "aws-nlb",
		Models: "AWS Network Load Balancer, TCP listener: a flow idle for 350 s (60-6,000 s) times out silently; data from either side after that gets an RST",
		Source: "AWS ELB user guide for Network Load Balancers, 'Update the TCP idle timeout' (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html): 'The default idle timeout value for TCP flows is 350 seconds', 'Enter a value for TCP idle timeout from 60-6000 seconds'; 'Network Load Balancers', Connection idle timeout (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#connection-idle-timeout): 'If a client or a target sends data after the idle timeout period elapses, it receives a TCP RST packet to indicate that the connection is no longer valid.' TCP keepalive packets reset the idle timer. The RST goes to the end that sent: reset_to both at the next segment",
		YAML:   "idle_timeout: 350s\non_expiry: reset\nreset_at: next-segment\nreset_to: both",
	},
	{
		Name:   "aws-network-firewall",
		Models: "AWS Network Firewall: TCP idle timeout 350 s by default (60-6,000 s); then data packets are dropped, and a new SYN is a new flow",
		Source: "AWS Network Firewall API reference, FlowTimeouts (https://docs.aws.amazon.com/network-firewall/latest/APIReference/API_FlowTimeouts.html): 'After the idle timeout passes, data packets are dropped, however, the next TCP SYN packet is considered a new flow and is processed by the firewall. Clients or targets can use TCP keepalive packets to reset the idle timeout. You can define the TcpIdleTimeoutSeconds value to be between 60 and 6000 seconds. If no value is provided, it defaults to 350 seconds.'",
		YAML:   "idle_timeout: 350s\non_expiry: drop",
	},
	{
		Name:   "azure-lb",
		Models: "Azure Standard Load Balancer rule with its defaults: idle timeout 4 min (4-100 min), the flow silently dropped at the timeout",
		Source: "Microsoft Learn, 'Load Balancer TCP Reset and Idle Timeout' (https://learn.microsoft.com/en-us/azure/load-balancer/load-balancer-tcp-reset): 'Load Balancer's default behavior is to silently drop flows when the idle timeout of a flow is reached'; 'Configure TCP reset and idle timeout' (https://learn.microsoft.com/en-us/azure/load-balancer/load-balancer-tcp-idle-timeout): 'a default timeout range of 4 minutes to 100 minutes ... The default setting is 4 minutes'",
		YAML:   "idle_timeout: 4m\non_expiry: drop",
	},
	{
		Name:   "azure-lb-tcp-reset",
		Models: "Azure Standard Load Balancer rule with 'TCP reset on idle' enabled: at the 4 min idle timeout an RST to both ends",
		Source: "Microsoft Learn, 'Load Balancer TCP Reset and Idle Timeout' (https://learn.microsoft.com/en-us/azure/load-balancer/load-balancer-tcp-reset): 'When enabled per rule, Load Balancer sends bidirectional TCP Resets (TCP RST packets) to both client and server endpoints at the time of idle timeout for all matching flows'; default timeout 4 minutes as azure-lb",
		YAML:   "idle_timeout: 4m\non_expiry: reset\nreset_at: expiry\nreset_to: both",
	},
	{
		Name:   "gcp-cloud-nat",
		Models: "Google Cloud NAT: established TCP connections time out after 1,200 s idle (tcpEstablishedIdleTimeoutSec)",
		Source: "Compute Engine API, RouterNat.tcpEstablishedIdleTimeoutSec: 'Timeout (in seconds) for TCP established connections. Defaults to 1200s if not set.' (Compute Engine API v1 as published in https://pub.dev/documentation/googleapis/latest/compute_v1/RouterNat/tcpEstablishedIdleTimeoutSec.html); what happens to a packet after the timeout is not stated there: dropped here",
		YAML:   "idle_timeout: 1200s\non_expiry: drop",
	},
	{
		Name:   "gcp-cloud-nat-udp",
		Models: "Google Cloud NAT's UDP mappings (HTTP/3): a mapping idle for 30 s (udpIdleTimeoutSec) is forgotten; the client's next datagram gets a new mapping, a new source port the server sees",
		Source: "Compute Engine API, RouterNat.udpIdleTimeoutSec: 'Timeout (in seconds) for UDP connections. Defaults to 30s if not set.' (Compute Engine API v1, RouterNat); the new mapping's port is the NAT's choice: modelled as a different one",
		YAML:   "idle_timeout: 30s\non_expiry: rebind",
	},
	{
		Name:   "kube-conntrack",
		Models: "a Kubernetes node's netfilter connection tracking as kube-proxy sets it: established TCP flows forgotten after 86,400 s (24 h) idle, the NAT mapping with them; later segments dropped",
		Source: "kube-proxy reference (https://kubernetes.io/docs/reference/generated/kube-proxy): '--conntrack-tcp-timeout-established duration Default: 24h0m0s Idle timeout for established TCP connections (0 to leave as-is)', which kube-proxy writes to nf_conntrack_tcp_timeout_established (the kernel's own default is 432,000 s: linux-conntrack). What a later segment meets depends on nf_conntrack_tcp_loose and the node's rules, not verified: modelled as a drop, the NAT mapping being gone",
		YAML:   "idle_timeout: 86400s\non_expiry: drop",
	},
	{
		Name:   "kube-ipvs",
		Models: "kube-proxy in IPVS mode: an established TCP connection's IPVS entry expires after 900 s idle (the kernel's default, which --ipvs-tcp-timeout 0 leaves as-is); later segments dropped (what they meet is not verified)",
		Source: "kube-proxy reference (https://kubernetes.io/docs/reference/generated/kube-proxy): '--ipvs-tcp-timeout duration The timeout for idle IPVS TCP connections, 0 to leave as-is. (e.g. '5s', '1m', '2h22m').' with no default, so the kernel's applies: Linux net/netfilter/ipvs/ip_vs_proto_tcp.c, tcp_timeouts[]: '[IP_VS_TCP_S_ESTABLISHED] = 15*60*HZ'. Once the entry expires IPVS has no state for the flow; whether the next non-SYN segment is dropped or answered with an RST was not found in a source: modelled as a drop",
		YAML:   "idle_timeout: 900s\non_expiry: drop",
	},
	{
		Name:   "linux-conntrack",
		Models: "Linux netfilter connection tracking (a Linux NAT or stateful firewall): nf_conntrack_tcp_timeout_established 432,000 s (5 days); also EC2 security-group connection tracking's default",
		Source: "Linux Documentation/networking/nf_conntrack-sysctl.rst: 'nf_conntrack_tcp_timeout_established - INTEGER (seconds) default 432000 (5 days)' (from memory of the kernel document); EC2 ConnectionTrackingSpecification (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ConnectionTrackingSpecificationResponse.html): 'tcpEstablishedTimeout ... Default: 432000 seconds'. After expiry a NAT's mapping is gone, modelled as a drop; with nf_conntrack_tcp_loose=1 (Linux's default) a plain stateful firewall may pick a mid-stream packet up as a new flow instead, which this preset does not model",
		YAML:   "idle_timeout: 432000s\non_expiry: drop",
	},
	{
		Name:   "linux-conntrack-udp",
		Models: "a Linux NAT's UDP flows (HTTP/3): a flow that has seen replies both ways (a stream) is forgotten after 120 s idle (nf_conntrack_udp_timeout_stream); the next datagram is masqueraded anew, possibly from another port",
		Source: "Linux Documentation/networking/nf_conntrack-sysctl.rst: 'nf_conntrack_udp_timeout_stream - INTEGER (seconds) default 120 This extended timeout will be used in case there is an UDP stream detected.' (nf_conntrack_udp_timeout, 30 s, is for a flow that has seen no reply, never a QUIC connection's)",
		YAML:   "idle_timeout: 120s\non_expiry: rebind",
	},
})
