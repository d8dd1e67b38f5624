// contained: holds ever more memory until the heap or the memory limit stops it
import java.util.*;
public class MemoryBomb {
    public static void main(String[] args) {
        List<long[]> hoard = new ArrayList<>();
        while (true) hoard.add(new long[1 << 20]);
    }
}
