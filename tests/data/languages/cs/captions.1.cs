Dva muži se dívají na něco v zahradě.
Malé dítě jede na kole po ulici.
Pes běží po pláži s míčem v tlamě.
Žena vaří v kuchyni.
Skupina dětí hraje fotbal v parku.
Starý muž sedí na lavičce a čte noviny.
Dívka v červených šatech skáče do bazénu.
Dva psi si hrají ve sněhu.
Muž sjíždí na skateboardu po rampě.
Hudebník hraje na ulici na kytaru.
Žena s deštníkem se prochází v dešti.
Tři mladí lidé sedí u stolu v kavárně.
Chlapec šplhá na strom.
Muž rybaří z loďky na jezeře.
Dav lidí sleduje průvod ve městě.
Černý pes plave řekou s klackem v tlamě.
Cyklista jede do kopce po horské silnici.
Matka tlačí kočárek přes trh.
Dvě dívky stavějí na pláži hrad z písku.
Kuchař krájí zeleninu v kuchyni restaurace.
Stavební dělník se žlutou helmou stojí na lešení.
Muž a žena tančí na svatbě.
Malý chlapec jí zmrzlinu.
Fotbalisté v červených a modrých dresech bojují o míč.
Žena běhá se svým psem v parku.
Surfař jede na velké vlně.
Rodina má piknik na louce.
Stará žena plete na pohovce.
Dva chlapci skáčou na trampolíně.
Muž opravuje kolo na chodníku.
Jezdec skáče na koni přes překážku.
Dítě krmí kachny u rybníka.
Studenti sedí v knihovně a učí se.
Žena prodává ovoce na stánku na trhu.
Muž v obleku telefonuje na nádraží.
Snowboardista letí vzduchem.
Školáci v uniformách jdou po ulici.
Hnědý pes chytá frisbee v parku.
Kapela hraje v noci na pódiu.
Žena fotografuje moře.
Muž leze po skalní stěně.
Dvě ženy se smějí v kuchyni a pečou dort.
Chlapec v modré košili kope do míče na ulici.
Miminko spí v náručí svého otce.
Běžci se účastní maratonu ve městě.
Muž natírá zeď na bílo.
Dívka jede na poníkovi.
Muž čeká v dešti na autobusové zastávce.
Skupina turistů se fotí před kostelem.
Pes leží na pohovce.
Dvě děti se houpou na dětském hřišti.
Žena nese na hlavě koš.
Pouliční prodavač griluje klobásy.
Mladý muž hraje basketbal.
Pár se prochází při západu slunce za ruce po pláži.
Vousatý muž hraje na harmoniku.
Dělníci vykládají bedny z nákladního auta.
Dívka sfukuje svíčky na narozeninovém dortu.
Muž jede na motorce po polní cestě.
Dva psi táhnou saně.
Žena cvičí jógu na pláži.
Děti se cachtají ve fontáně.
Starý muž a chlapec rybaří z mostu.
Číšník nese talíře v restauraci.
Muž spí na lavičce v parku.
Žena jede na kole s košíkem.
Hasič stříká vodu.
Dívka s kloboukem čte v trávě.
Kajakáři sjíždějí řeku.
Muž odklízí sníh před svým domem.
Dva muži hrají šachy v parku.
Dítě kreslí křídou na chodník.
Žena venčí tři psy na ulici.
Muž v oranžové vestě zametá ulici.
Chlapec skáče ze skály do jezera.
Turisté jdou po horské stezce.
Mladá žena zpívá do mikrofonu.
Muž tlačí vozík se zeleninou.
Lidé stojí v přeplněném metru.
Malý bílý pes běží vysokou trávou.
