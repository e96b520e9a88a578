// The feature levels a Kafka release knows, as reference/feature_versions.py records them (its docstring):
//   java -cp "$HOME/.cache/kafka-chaos/jars/<version>/libs/*" scripts/FeatureTable.java
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.FeatureVersion;
import org.apache.kafka.server.common.MetadataVersion;

public class FeatureTable {
    public static void main(String[] a) {
        System.out.println("metadata.version " + MetadataVersion.MINIMUM_VERSION.featureLevel() + " "
            + MetadataVersion.LATEST_PRODUCTION.featureLevel() + " " + MetadataVersion.latestTesting().featureLevel());
        System.out.println("mv names " + MetadataVersion.LATEST_PRODUCTION.featureLevel() + "=" + MetadataVersion.LATEST_PRODUCTION.version() + " " + MetadataVersion.latestTesting().featureLevel() + "=" + MetadataVersion.latestTesting().version());
        for (Feature f : Feature.PRODUCTION_FEATURES) {
            System.out.println(f.featureName() + " " + f.minimumProduction() + " " + f.latestProduction() + " " + f.latestTesting());
            for (FeatureVersion v : f.featureVersions()) {
                if (!v.dependencies().isEmpty()) System.out.println("  dep " + f.featureName() + "=" + v.featureLevel() + " " + v.dependencies());
            }
        }
    }
}
