package kafkachaos;

import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Starts a Kroxylicious proxy from a YAML configuration file (args[0]) and blocks until it stops. */
public final class KroxyliciousBroker {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: KroxyliciousBroker CONFIG.yaml");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config;
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            config = parser.parseConfiguration(in);
        }
        try (KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures())) {
            proxy.startup();
            System.out.println("kroxylicious-proxy started: " + args[0]);
            System.out.flush();
            proxy.block();
        }
    }
}
