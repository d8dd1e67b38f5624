// contained: starts threads until the process limit refuses
public class ThreadStorm {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 100000; i++) {
            Thread t = new Thread(() -> { try { Thread.sleep(100000); } catch (InterruptedException e) {} });
            t.setDaemon(true);
            t.start();
        }
    }
}
