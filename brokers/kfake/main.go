// kfake-broker: franz-go's in-memory Kafka-compatible cluster (github.com/twmb/franz-go/pkg/kfake)
// as a broker binary for kafka-chaos (docs/broker-contract.md, docs/examples/kfake.toml).
//
// One process serves every node id it is given, each on its own port, and advertises
// ADVERTISED_HOST:<port> in Metadata and FindCoordinator (kfake itself would advertise the address it
// listens on). Configuration by flags or environment variables (flags win):
//
//	-node-ids / KFAKE_NODE_IDS           node ids, comma separated (default "0")
//	-ports / KFAKE_PORTS                 one listening port per node id (default 9092, 9093, ...)
//	-advertised-host / KFAKE_ADVERTISED_HOST   host clients are told to dial (default 127.0.0.1)
//	-cluster-id / KFAKE_CLUSTER_ID       cluster id reported in Metadata (default "kfake")
//	-hide-apis / KFAKE_HIDE_APIS         API keys not to advertise in ApiVersions, comma separated
//	                                     (e.g. "43,45,46": ElectLeaders, Alter/ListPartitionReassignments)
//	-auto-create / KFAKE_AUTO_CREATE     allow auto topic creation (default true)
//	-partitions / KFAKE_PARTITIONS       default partitions of a new topic (default 1)
//	-log-level / KFAKE_LOG_LEVEL         none, error, warn, info, debug (default warn)
//	-no-groups / KFAKE_NO_GROUPS         answer every JoinGroup with COORDINATOR_NOT_AVAILABLE (15): a
//	                                     broker that advertises the group APIs but runs no consumer group
//	                                     (tests of the preflight's "no consumer group support")
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// advertisedListener accepts on the real listener and reports advertised host:port as its address
// (kfake puts a broker's listener address into Metadata).
type advertisedListener struct {
	net.Listener
	addr net.Addr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

type hostAddr struct{ hp string }

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return a.hp }

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func ints(s, what string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kfake-broker: %s: %q is not a number\n", what, f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

func main() {
	nodeIDs := flag.String("node-ids", env("KFAKE_NODE_IDS", "0"), "node ids, comma separated")
	ports := flag.String("ports", env("KFAKE_PORTS", ""), "one port per node id, comma separated")
	host := flag.String("advertised-host", env("KFAKE_ADVERTISED_HOST", "127.0.0.1"), "advertised host")
	clusterID := flag.String("cluster-id", env("KFAKE_CLUSTER_ID", "kfake"), "cluster id")
	hide := flag.String("hide-apis", env("KFAKE_HIDE_APIS", ""), "API keys not to advertise")
	autoCreate := flag.Bool("auto-create", env("KFAKE_AUTO_CREATE", "true") == "true", "auto topic creation")
	parts := flag.Int("partitions", ints(env("KFAKE_PARTITIONS", "1"), "KFAKE_PARTITIONS")[0], "default partitions")
	logLevel := flag.String("log-level", env("KFAKE_LOG_LEVEL", "warn"), "none, error, warn, info, debug")
	noGroups := flag.Bool("no-groups", env("KFAKE_NO_GROUPS", "false") == "true", "fail every JoinGroup")
	flag.Parse()

	ids := ints(*nodeIDs, "node ids")
	if len(ids) == 0 {
		fmt.Fprintln(os.Stderr, "kfake-broker: no node ids")
		os.Exit(2)
	}
	ps := ints(*ports, "ports")
	if len(ps) == 0 {
		for i := range ids {
			ps = append(ps, 9092+i)
		}
	}
	if len(ps) != len(ids) {
		fmt.Fprintf(os.Stderr, "kfake-broker: %d node ids but %d ports\n", len(ids), len(ps))
		os.Exit(2)
	}
	level := map[string]kfake.LogLevel{"none": kfake.LogLevelNone, "error": kfake.LogLevelError,
		"warn": kfake.LogLevelWarn, "info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug}[strings.ToLower(*logLevel)]

	// every listener binds all interfaces (a container's published port arrives on its own address)
	// and reports the advertised address
	listen := func(network, address string) (net.Listener, error) {
		_, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen(network, net.JoinHostPort("0.0.0.0", port))
		if err != nil {
			return nil, err
		}
		_, real, _ := net.SplitHostPort(ln.Addr().String())
		return advertisedListener{ln, hostAddr{net.JoinHostPort(*host, real)}}, nil
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1), kfake.Ports(0), kfake.ListenFn(listen), kfake.ClusterID(*clusterID),
		kfake.DefaultNumPartitions(*parts), kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if hidden := ints(*hide, "hidden APIs"); len(hidden) > 0 {
		v := kversion.Stable()
		for _, k := range hidden {
			v.SetMaxKeyVersion(int16(k), -1)
		}
		opts = append(opts, kfake.MaxVersions(v))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-broker: %v\n", err)
		os.Exit(1)
	}
	// kfake numbers its first node 0 on an ephemeral port: add the asked nodes, then drop that one
	bootstrap := c.ListenAddrs()
	for i, id := range ids {
		if _, _, err := c.AddNode(int32(id), ps[i]); err != nil && id != 0 {
			fmt.Fprintf(os.Stderr, "kfake-broker: node %d on port %d: %v\n", id, ps[i], err)
			os.Exit(1)
		}
	}
	keep0 := false
	for _, id := range ids {
		keep0 = keep0 || id == 0
	}
	if !keep0 {
		if err := c.RemoveNode(0); err != nil {
			fmt.Fprintf(os.Stderr, "kfake-broker: %v\n", err)
			os.Exit(1)
		}
	}
	_ = bootstrap
	if *noGroups {
		c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode = 15 // COORDINATOR_NOT_AVAILABLE
			return resp, nil, true
		})
	}
	setController(c, int32(ids[0]))
	fmt.Printf("kfake-broker started: node ids %v on ports %v, advertised host %s, cluster id %s at %s\n",
		ids, ps, *host, *clusterID, time.Now().UTC().Format(time.RFC3339))

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs
	c.Close()
}

// setController makes node id the cluster's controller. kfake fixes its controller (the node that
// answers CreateTopics, DeleteTopics, CreatePartitions and is reported in Metadata) to its last
// initial node when the cluster is created and has no option to choose it; here the initial node 0
// is replaced by the asked ids, so the controller is pointed at the first asked node. Done once,
// before any client has connected (the harness waits for the "started" line).
func setController(c *kfake.Cluster, id int32) {
	cv := reflect.ValueOf(c).Elem()
	bs := cv.FieldByName("bs")
	for i := 0; i < bs.Len(); i++ {
		b := bs.Index(i)
		if b.Elem().FieldByName("node").Int() == int64(id) {
			f := cv.FieldByName("controller")
			b = reflect.NewAt(b.Type(), unsafe.Pointer(b.UnsafeAddr())).Elem()
			reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(b)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "kfake-broker: node %d not found to make it the controller\n", id)
	os.Exit(1)
}
